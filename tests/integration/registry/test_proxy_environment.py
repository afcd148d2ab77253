"""The registry client reads the environment once: HTTP_PROXY and NO_PROXY still decide, per
origin, whether a request goes through a proxy (a small forward proxy made here records what
it carries), and ~/.netrc never adds credentials."""

from __future__ import annotations

import http.server
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bed.oci import make_image, push
from bed.registry import Registry
from bed.tunnel import PROXY_VARIABLES
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient

pytestmark = pytest.mark.integration

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _Forward(http.server.BaseHTTPRequestHandler):
    """A forward proxy for plain HTTP: relays absolute-form requests, noting each."""

    seen: list[tuple[str, str | None]]  # set by the `proxied` fixture's subclass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        relayed = urllib.request.Request(self.path, headers={"Accept": self.headers["Accept"]})
        try:
            answer = _DIRECT.open(relayed, timeout=10)
        except urllib.error.HTTPError as error:
            answer = error
        body = answer.read()
        self.send_response(answer.status)
        for name in ("Content-Type", "Docker-Content-Digest"):
            if answer.headers.get(name):
                self.send_header(name, answer.headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


Seen = list[tuple[str, str | None]]  # (request target, Authorization header) per request


@pytest.fixture
def proxied(
    monkeypatch: pytest.MonkeyPatch, registry: Registry
) -> Iterator[tuple[Repository, Seen]]:
    """A repository holding `v1`, and what the forward proxy carried once HTTP_PROXY names
    it (no other proxy variable set; the image is pushed before, not through it)."""
    push(registry.url, "proxied/app", make_image([{"app/a.txt": b"a"}]), tag="v1")
    seen: Seen = []
    handler = type("Recorded", (_Forward,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
    yield Repository(registry.host, "proxied/app"), seen
    server.shutdown()
    server.server_close()


def test_http_proxy_carries_every_request_to_the_registry(
    proxied: tuple[Repository, Seen],
) -> None:
    repo, seen = proxied
    with RegistryClient() as client:
        assert client.list_tags(repo) == ["v1"]
        client.get_manifest(repo.tag("v1"))
    paths = [path for path, _ in seen]
    assert f"http://{repo.registry}/v2/proxied/app/tags/list" in paths
    assert f"http://{repo.registry}/v2/proxied/app/manifests/v1" in paths


def test_no_proxy_sends_the_registry_direct(
    monkeypatch: pytest.MonkeyPatch, proxied: tuple[Repository, Seen]
) -> None:
    repo, seen = proxied
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with RegistryClient() as client:
        assert client.list_tags(repo) == ["v1"]
    assert seen == []


def test_netrc_credentials_are_never_added(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, proxied: tuple[Repository, Seen]
) -> None:
    repo, seen = proxied
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    with RegistryClient(environ={"HOME": str(tmp_path)}) as client:
        assert client.list_tags(repo) == ["v1"]
    assert seen
    assert all(authorization is None for _, authorization in seen)
