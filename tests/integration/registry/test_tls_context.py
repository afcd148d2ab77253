"""TLS to a registry: the CAs are loaded once per client into one shared context, not once
per connection (requests' own way: each of eight concurrent reads loaded the whole default
bundle again), and certificates are still checked against the same CAs. The topology's TLS
registry is the bed's Python proxy (Python's ssl on both ends); the last tests talk to
docker-registry's own TLS (Go's crypto/tls), directly and tunnelled through the bed's CONNECT
proxy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bed.pki import CertificateAuthority
from bed.registry import run_registry
from bed.topology import RegistryTopology
from bed.tunnel import PROXY_VARIABLES, tunnelling_proxy
from gpuship.compat.audit import audit_from_document
from gpuship.errors import InputError, RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.artifact import READ_WORKERS, read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.retry import RetryPolicy
from gpuship.registry.tls import BUNDLE_VARS
from gpuship.route.inventory import publish_audit, read_inventory
from integration.registry.ssl_calls import count_calls

pytestmark = pytest.mark.integration

READINGS = Path(__file__).resolve().parents[2] / "data" / "gpu-readings"


@pytest.fixture(autouse=True)
def no_bundle_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CAs come from each test's own settings, not from a bundle this shell names."""
    for name in BUNDLE_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("ca", "loads"), [("SSL_CERT_FILE", 1), ("certs.d", 2)])
def test_concurrent_reads_load_the_cas_once(
    monkeypatch: pytest.MonkeyPatch, registry_topology: RegistryTopology, ca: str, loads: int
) -> None:
    """SSL_CERT_FILE: that bundle, once. certs.d: requests' default bundle and the host's
    ca.crt, once each (and the system's CAs, as dockerd trusts them)."""
    topology = registry_topology
    repo = Repository(topology.tls.host, "tls-context/app")
    bundles = count_calls(monkeypatch, "load_verify_locations")
    with RegistryClient(environ=topology.environ(ca=ca)) as client:
        tags = [f"t{n}" for n in range(READ_WORKERS * 2)]
        answers = read_each(lambda tag: client.blob_exists(repo, "sha256:" + "0" * 64), tags)
        assert answers == [False] * len(tags)
    assert len(bundles) == loads


def test_a_certificate_the_cas_do_not_vouch_for_is_still_refused(
    registry_topology: RegistryTopology,
) -> None:
    """No bundle, no certs.d: the default CAs do not know the bed's CA."""
    environ = {"GPUSHIP_CERTS_DIR": "/nonexistent", "DOCKER_CONFIG": "/nonexistent"}
    with (
        RegistryClient(environ=environ, retry=RetryPolicy(attempts=1)) as client,
        pytest.raises(RegistryUnavailable, match="not trusted"),
    ):
        client.list_tags(Repository(registry_topology.tls.host, "tls-context/app"))


def test_a_broken_ca_file_is_a_clear_input_error(
    tmp_path: Path, registry_topology: RegistryTopology
) -> None:
    host = registry_topology.tls.host
    (tmp_path / host).mkdir()
    (tmp_path / host / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nnot base64\n")
    environ = {"GPUSHIP_CERTS_DIR": str(tmp_path), "DOCKER_CONFIG": "/nonexistent"}
    with (
        RegistryClient(environ=environ, retry=RetryPolicy(attempts=1)) as client,
        pytest.raises(InputError, match=f"cannot load CA certificates {tmp_path}/{host}/ca.crt"),
    ):
        client.list_tags(Repository(host, "tls-context/app"))


def test_a_registry_serving_tls_itself_is_written_and_read_through_certs_d(
    tmp_path: Path,
) -> None:
    """docker-registry with its own certificate (Go's TLS stack, not the Python proxy's): an
    inventory entry published and read back, trusting the CA through certs.d; refused as
    untrusted without it."""
    ca = CertificateAuthority(tmp_path / "ca")
    document = json.loads((READINGS / "NVIDIA-H200-580.159.04.audit.json").read_text())
    audit = audit_from_document(document, "H200 audit")
    with run_registry(tmp_path / "registry", "tls-user", "tls-secret", tls=ca) as registry:
        repo = Repository(registry.host, "go-tls/fleet")
        certs = ca.trusted_in(tmp_path / "certs.d", registry.host)
        environ = registry.credential_env() | {"DOCKER_CONFIG": str(tmp_path / "no-config")}
        with RegistryClient(environ=environ | {"GPUSHIP_CERTS_DIR": str(certs)}) as client:
            publish_audit(client, repo, audit, None)
            inventory = read_inventory(client, repo)
        assert [entry.audit for entry in inventory.entries] == [audit]
        untrusting = environ | {"GPUSHIP_CERTS_DIR": str(tmp_path / "none")}
        with (
            RegistryClient(environ=untrusting, retry=RetryPolicy(attempts=1)) as client,
            pytest.raises(RegistryUnavailable, match="not trusted"),
        ):
            client.list_tags(repo)


@pytest.mark.parametrize(("ca", "loads"), [("certs.d", 2), ("SSL_CERT_FILE", 1)])
def test_tls_tunnelled_through_a_proxy_trusts_the_same_cas_loaded_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ca: str, loads: int
) -> None:
    """HTTPS_PROXY naming a plain-HTTP proxy: every request is a CONNECT tunnel ending in TLS
    with the registry itself. The registry's CA is trusted there as on a direct connection
    (certs.d included), and 16 concurrent reads load the CAs once, not once per tunnel.
    Without the CA the certificate is still refused."""
    authority = CertificateAuthority(tmp_path / "ca")
    with (
        run_registry(tmp_path / "registry", tls=authority) as registry,
        tunnelling_proxy() as (proxy, targets),
    ):
        for name in PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        certs = authority.trusted_in(tmp_path / "certs.d", registry.host)
        untrusting = {"GPUSHIP_CERTS_DIR": str(tmp_path / "none"), "DOCKER_CONFIG": "/none"}
        trusting = untrusting | (
            {"GPUSHIP_CERTS_DIR": str(certs)}
            if ca == "certs.d"
            else {"SSL_CERT_FILE": str(authority.cert_path)}
        )
        repo = Repository(registry.host, "tunnelled/app")
        bundles = count_calls(monkeypatch, "load_verify_locations")
        with RegistryClient(environ=trusting, retry=RetryPolicy(attempts=1)) as client:
            tags = [f"t{n}" for n in range(READ_WORKERS * 2)]
            answers = read_each(lambda tag: client.blob_exists(repo, "sha256:" + "0" * 64), tags)
        assert answers == [False] * len(tags)
        assert set(targets) == {registry.host}
        assert len(bundles) == loads
        with (
            RegistryClient(environ=untrusting, retry=RetryPolicy(attempts=1)) as client,
            pytest.raises(RegistryUnavailable, match="not trusted"),
        ):
            client.list_tags(repo)
