"""TLS to a registry: the CAs are loaded once per client into one shared context, not once
per connection (requests' own way: each of eight concurrent reads loaded the whole default
bundle again), and certificates are still checked against the same CAs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bed.topology import RegistryTopology
from gpuship.errors import InputError, RegistryUnavailable
from gpuship.registry.access import RetryPolicy
from gpuship.registry.artifact import READ_WORKERS, read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.reference import Repository
from integration.registry.ssl_calls import count_calls

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("ca", "loads"), [("SSL_CERT_FILE", 1), ("certs.d", 2)])
def test_concurrent_reads_load_the_cas_once(
    monkeypatch: pytest.MonkeyPatch, registry_topology: RegistryTopology, ca: str, loads: int
) -> None:
    """SSL_CERT_FILE: that bundle, once. certs.d: requests' default bundle and the host's
    ca.crt, once each (and the system's CAs, as dockerd trusts them)."""
    topology = registry_topology
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)
    repo = Repository(topology.tls.host, "tls-context/app")
    bundles = count_calls(monkeypatch, "load_verify_locations")
    with RegistryClient(environ=topology.environ(ca=ca)) as client:
        tags = [f"t{n}" for n in range(READ_WORKERS * 2)]
        answers = read_each(lambda tag: client.blob_exists(repo, "sha256:" + "0" * 64), tags)
        assert answers == [False] * len(tags)
    assert len(bundles) == loads


def test_a_certificate_the_cas_do_not_vouch_for_is_still_refused(
    monkeypatch: pytest.MonkeyPatch, registry_topology: RegistryTopology
) -> None:
    """No bundle, no certs.d: the default CAs do not know the bed's CA."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)
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
