"""The scheme probe of loopback and insecure registries: a direct handshake tells a plain-HTTP
registry from a TLS one, so plain HTTP costs no CA bundle load; a TLS registry is still probed
with its certificate verified (its errors: test_credential_scope.py)."""

from __future__ import annotations

import socket

import pytest

from bed.oci import make_image, push
from bed.registry import Registry
from bed.topology import RegistryTopology
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.tls import speaks_tls
from integration.registry.ssl_calls import count_calls

pytestmark = pytest.mark.integration


def _split(host: str) -> tuple[str, int]:
    name, _, port = host.rpartition(":")
    return name, int(port)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_handshake_tells_tls_from_plain_http(
    registry: Registry, registry_topology: RegistryTopology
) -> None:
    assert speaks_tls(*_split(registry_topology.tls.host), timeout=5) is True
    assert speaks_tls(*_split(registry.host), timeout=5) is False
    assert speaks_tls("127.0.0.1", _closed_port(), timeout=5) is False


def test_a_plain_http_registry_costs_no_ca_load(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> None:
    push(registry.url, "probe/plain", make_image([{"a.txt": b"a"}]), tag="v1")
    loads = count_calls(monkeypatch, "load_verify_locations")
    with RegistryClient() as client:
        assert client.list_tags(Repository(registry.host, "probe/plain")) == ["v1"]
        assert client.base_url(Repository(registry.host, "probe/plain")).startswith("http://")
    assert loads == []


def test_a_tls_registry_on_loopback_is_still_verified(
    monkeypatch: pytest.MonkeyPatch, registry_topology: RegistryTopology
) -> None:
    loads = count_calls(monkeypatch, "load_verify_locations")
    repo = Repository(registry_topology.tls.host, "probe/tls")
    with RegistryClient(environ=registry_topology.environ(ca="SSL_CERT_FILE")) as client:
        assert client.base_url(repo) == f"https://{registry_topology.tls.host}"
    assert loads  # the certificate was checked against the CA given
