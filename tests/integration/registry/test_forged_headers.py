"""A registry, or what answers in its place, whose headers point where they must not (issue #36):

- a `Location`, `Link` or `WWW-Authenticate` no URL parser takes (`http://[::1`) is one line
  naming the header, exit 3, no traceback;
- a `Link` back to a page already read (a tag list or referrers walk that would never end)
  is one line, exit 3;
- a token realm on an internal address (loopback, private, link-local: a runner's metadata
  service or a sidecar) other than the registry's own host is never fetched: one line, exit 3.
  A realm on the registry's own host (another port) is fetched as before
  (`test_credential_scope.py` has the bed's token service on another loopback port).

The real registry stands behind the bed's fault proxy, which forges the header.
"""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bed import faults
from bed.oci import make_image, push
from bed.registry import Registry
from gpuship.cli.main import main
from gpuship.errors import RegistryUnavailable
from gpuship.reference import parse_reference
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import MEDIA_OCI_INDEX, MEDIA_OCI_MANIFEST

pytestmark = pytest.mark.integration

_DIGEST_A, _DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
FAST = {"GPUSHIP_REGISTRIES__ATTEMPTS": "1", "GPUSHIP_REGISTRIES__BACKOFF": "0.01"}


@pytest.fixture(scope="module")
def repository(registry: Registry) -> str:
    """`forged/app` with tag `v1` on the real registry."""
    push(registry.url, "forged/app", make_image([{"app": b"forged headers"}]), tag="v1")
    return "forged/app"


def _gpuship(argv: list[str]) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--deadline", "20"], FAST, stdout, stderr)
    return code, stderr.getvalue()


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _on(fault: str, part: str):  # type: ignore[no-untyped-def]
    """A hook answering `fault` to every request whose path holds `part`."""
    return lambda _index, _method, path: fault if part in path else None


@pytest.mark.parametrize(
    ("fault", "part", "command", "header"),
    [
        ("forge-location", "/manifests/", "inspect", "Location"),
        ("forge-link", "/tags/list", "history", "Link"),
        ("forge-challenge", "/manifests/", "inspect", "WWW-Authenticate"),
    ],
)
def test_a_malformed_header_is_one_line_and_exit_3(
    registry: Registry, repository: str, fault: str, part: str, command: str, header: str
):
    with faults.start(registry.host, hook=_on(fault, part)) as proxy:
        target = f"{proxy.host}/{repository}" + (":v1" if command == "inspect" else "")
        code, stderr = _gpuship([command, target])
    assert any(entry.fault == fault and entry.applied for entry in proxy.log)
    line = _one_line(stderr)
    assert code == 3, stderr
    assert header in line and "http://[::1" in line, line


class _Realm(ThreadingHTTPServer):
    """A token service that counts the requests reaching it."""

    def __init__(self, address: str) -> None:
        self.asked = 0
        realm = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                realm.asked += 1
                body = b'{"token": "internal-token"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        super().__init__((address, 0), Handler)


def _private_address() -> str:
    """An address of this machine that is not loopback (192.0.2.2 on the test machine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))  # no packet is sent: only the route is chosen
        address = str(probe.getsockname()[0])
    if address.startswith("127.") or address == "0.0.0.0":
        pytest.skip("this machine has no address besides loopback for a realm to sit on")
    return address


@pytest.fixture
def internal_realm() -> Iterator[_Realm]:
    server = _Realm(_private_address())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_realm_on_another_internal_address_is_never_fetched(
    registry: Registry, repository: str, internal_realm: _Realm
):
    host, port = internal_realm.server_address[:2]
    realm = f"http://{host}:{port}/token"
    with faults.start(registry.host, hook=_on("forge-challenge", "/v2/"), forged=realm) as proxy:
        code, stderr = _gpuship(["inspect", f"{proxy.host}/{repository}:v1"])
    line = _one_line(stderr)
    assert code == 3, stderr
    assert internal_realm.asked == 0
    assert f"http://{host}:{port}" in line and "internal address" in line, line


@pytest.mark.parametrize(
    "realm",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/latest/meta-data/",  # 169.254.169.254 as one decimal number
        "http://[::ffff:169.254.169.254]/token",
        "http://10.0.0.1/token",
        "http://0.0.0.0:8080/token",
    ],
)
def test_a_realm_on_a_metadata_or_private_address_is_refused(
    registry: Registry, repository: str, realm: str
):
    with faults.start(registry.host, hook=_on("forge-challenge", "/v2/"), forged=realm) as proxy:
        code, stderr = _gpuship(["inspect", f"{proxy.host}/{repository}:v1"])
    line = _one_line(stderr)
    assert code == 3, stderr
    assert "internal address" in line, line


def test_a_link_back_to_a_page_already_read_is_one_line_and_exit_3(
    registry: Registry, repository: str
):
    # Every tag list answer names itself as the next page: followed, it never ends.
    again = f"/v2/{repository}/tags/list"
    with faults.start(registry.host, hook=_on("forge-link", "/tags/list"), forged=again) as proxy:
        code, stderr = _gpuship(["history", f"{proxy.host}/{repository}"])
    line = _one_line(stderr)
    assert code == 3, stderr
    assert "links back to a page already read" in line and again in line, line
    assert len([e for e in proxy.log if "/tags/list" in e.path]) == 1, proxy.log


class _ReferrersLoop(ThreadingHTTPServer):
    """A STAND-IN registry that answers the OCI referrers API (Debian's docker-registry, the
    real one here, predates it): one referrer per page, each page's `Link` naming itself."""

    def __init__(self) -> None:
        self.pages = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.pages += "/referrers/" in self.path
                body = json.dumps(
                    {
                        "schemaVersion": 2,
                        "mediaType": MEDIA_OCI_INDEX,
                        "manifests": [
                            {"mediaType": MEDIA_OCI_MANIFEST, "digest": _DIGEST_A, "size": 2}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", MEDIA_OCI_INDEX)
                self.send_header("Link", f'<{self.path}>; rel="next"')
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_a_referrers_link_back_to_its_own_page_ends_the_walk() -> None:
    server = _ReferrersLoop()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    try:
        with RegistryClient(environ={}) as client, pytest.raises(RegistryUnavailable) as raised:
            client.referrers(parse_reference(f"{host}/app@{_DIGEST_B}"))
    finally:
        server.shutdown()
        server.server_close()
    assert "referrers of" in str(raised.value) and "already read" in str(raised.value)
    assert server.pages == 1
