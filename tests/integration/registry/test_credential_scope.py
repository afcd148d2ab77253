"""Each credential reaches its own registry only: token realms on another port, redirects to
blob storage, public bases next to private registries, TLS with the CA given as users give it.

Every test runs against the bed's registry topology with the credential ledger on, and ends by
asserting both sides: what should have reached a host did (so the recorder is seen working), and
nothing reached a host it does not belong to.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import requests

from bed.oci import make_image, push
from bed.topology import RegistryTopology
from gpuship.errors import RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import RegistryAuthError
from gpuship.registry.retry import RetryPolicy
from gpuship.registry.tls import UntrustedCertificate
from gpuship.registry.transport import Transport

pytestmark = pytest.mark.integration

# A token that must never reach any bed host (it would show up as an unknown Basic credential).
GITHUB = {"GITHUB_TOKEN": "ghs_never-sent-to-the-bed", "GITHUB_ACTOR": "octocat"}


def upload(client: RegistryClient, repo: Repository, tag: str, marker: str) -> str:
    image = make_image([{"etc/marker": marker.encode()}])
    for blob in (*image.layers, image.config):
        client.upload_blob(repo, blob.digest, io.BytesIO(blob.data), len(blob.data))
    client.put_manifest(repo.tag(tag), image.manifest.data, image.manifest.media_type)
    return image.digest


def test_every_registry_gets_its_own_credential_and_no_other(
    registry_topology: RegistryTopology,
):
    topology = registry_topology
    environ = {**topology.environ(), **GITHUB}
    mark = topology.ledger.mark()
    base = make_image([{"etc/base": b"public base"}])
    push(topology.public.upstream.url, "scope/base", base, tag="1")
    with RegistryClient(environ=environ) as client:
        assert client.resolve_digest(Repository(topology.public.host, "scope/base").tag("1")) == (
            base.digest
        )
        for registry in (topology.push, topology.basic, topology.tls):
            repo = Repository(registry.host, "scope/app")
            digest = upload(client, repo, "v1", registry.name)
            assert client.resolve_digest(repo.tag("v1")) == digest
    ledger = topology.ledger
    assert ledger.presented(topology.public.host, mark) == set()
    assert ledger.presented(topology.push.issuer.host, mark) == {"the push registry's credential"}
    assert ledger.presented(topology.push.host, mark) == {f"token for {topology.push.host}"}
    assert ledger.presented(topology.basic.host, mark) == {"the basic-auth registry's credential"}
    assert ledger.presented(topology.tls.host, mark) == {"the TLS registry's credential"}
    assert topology.violations() == []


def test_a_single_credential_stays_with_the_registry_it_names(
    registry_topology: RegistryTopology,
):
    topology = registry_topology
    environ = {
        **topology.push.credential_env(),
        "GPUSHIP_CERTS_DIR": str(topology.certs_dir),
        "DOCKER_CONFIG": "/nonexistent",
        **GITHUB,
    }
    with RegistryClient(environ=environ) as client:
        upload(client, Repository(topology.push.host, "scope/single"), "v1", "single")
        for registry in (topology.basic, topology.tls):
            with pytest.raises(RegistryAuthError, match="needs a username and password"):
                client.list_tags(Repository(registry.host, "scope/app"))
    assert "the push registry's credential" not in topology.ledger.presented(topology.basic.host)
    assert "the push registry's credential" not in topology.ledger.presented(topology.tls.host)
    assert topology.violations() == []


def test_a_token_service_on_another_host_gets_the_credential_only_when_named(
    registry_topology: RegistryTopology,
):
    topology = registry_topology
    issuer = topology.push.issuer
    unnamed = {
        key: value
        for key, value in topology.push.credential_env().items()
        if key != "GPUSHIP_REGISTRY_TOKEN_SERVICE"
    }
    before = len(issuer.requests)
    with pytest.raises(RegistryAuthError) as refused:
        RegistryClient(environ={**unnamed, "DOCKER_CONFIG": "/nonexistent"}).list_tags(
            Repository(topology.push.host, "scope/app")
        )
    message = str(refused.value)
    assert f"token service http://{issuer.host} is on another host" in message
    assert "GPUSHIP_REGISTRY_TOKEN_SERVICE" in message
    assert topology.push.password not in message
    # The token service was asked, anonymously: the credential never left for it.
    asked = issuer.requests[before:]
    assert asked and not any(authorised for _, authorised in asked)
    assert topology.violations() == []


def test_blob_downloads_redirected_to_storage_carry_no_credential(
    registry_topology: RegistryTopology,
):
    topology = registry_topology
    served = topology.storage.served
    mark = topology.ledger.mark()
    repo = Repository(topology.push.host, "scope/redirect")
    with RegistryClient(environ=topology.environ()) as client:
        upload(client, repo, "v1", "redirected")
        manifest = json.loads(client.get_manifest(repo.tag("v1")).data)
        for descriptor in (manifest["config"], *manifest["layers"]):
            with client.open_blob(repo, descriptor["digest"]) as reader:
                assert len(reader.read()) == descriptor["size"]
    assert topology.storage.served == served + 2
    assert topology.ledger.presented(topology.storage.host, mark) == set()
    assert topology.violations() == []


def test_docker_config_credentials_are_scoped_by_host(
    registry_topology: RegistryTopology, tmp_path: Path
):
    topology = registry_topology
    (tmp_path / "config.json").write_text(
        json.dumps({"auths": {topology.basic.host: {"auth": topology.basic.docker_auth()}}})
    )
    environ = {"DOCKER_CONFIG": str(tmp_path), **GITHUB}
    with RegistryClient(environ=environ) as client:
        upload(client, Repository(topology.basic.host, "scope/docker-config"), "v1", "dc")
        with pytest.raises(RegistryAuthError):
            client.list_tags(Repository(topology.push.host, "scope/app"))
    assert topology.violations() == []


@pytest.mark.parametrize("ca", ["certs.d", "SSL_CERT_FILE"])
def test_tls_registry_with_the_ca_given_as_users_give_it(
    registry_topology: RegistryTopology, ca: str
):
    topology = registry_topology
    repo = Repository(topology.tls.host, f"scope/tls-{ca.lower().replace('.', '-')}")
    with RegistryClient(environ=topology.environ(ca=ca)) as client:
        digest = upload(client, repo, "v1", ca)
        assert client.resolve_digest(repo.tag("v1")) == digest
    assert topology.violations() == []


def test_an_untrusted_certificate_is_refused_and_no_credential_is_sent(
    registry_topology: RegistryTopology,
):
    topology = registry_topology
    mark = topology.ledger.mark()
    environ = {**topology.tls.credential_env(), "DOCKER_CONFIG": "/nonexistent"}
    client = RegistryClient(environ=environ, retry=RetryPolicy(attempts=1))
    with pytest.raises(RegistryUnavailable, match="certificate that is not trusted"):
        client.list_tags(Repository(topology.tls.host, "scope/app"))
    # The handshake failed before any header was sent: the TLS registry saw nothing at all.
    assert topology.ledger.mark() == mark


def test_an_untrusted_certificate_is_not_retried_and_the_error_says_how_to_trust_it(
    registry_topology: RegistryTopology,
):
    """Past the scheme probe (a registry not on loopback goes straight to HTTPS), a
    certificate that does not verify fails the first try: no backoff, no second handshake."""
    topology = registry_topology
    host = topology.tls.host
    slept: list[float] = []
    with requests.Session() as session:
        transport = Transport(session, RetryPolicy(attempts=5), sleep=slept.append)
        with pytest.raises(UntrustedCertificate, match="certificate is not trusted") as raised:
            transport.send("GET", f"https://{host}/v2/")
    assert raised.value.host == host
    assert slept == []
    # The client names the CA settings that would make it trusted. (`_send`: its public calls
    # probe a loopback host's scheme first, and the probe has its own message, tested above.)
    environ = {"GPUSHIP_CERTS_DIR": "/srv/certs.d", "DOCKER_CONFIG": "/nonexistent"}
    with (
        RegistryClient(environ=environ) as client,
        pytest.raises(UntrustedCertificate, match=f"/srv/certs.d/{host}/ca.crt"),
    ):
        client._send("GET", f"https://{host}/v2/")
