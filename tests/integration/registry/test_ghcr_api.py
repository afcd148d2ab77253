"""GHCR deletion through the GitHub Packages REST API.

GitHub cannot be reached from the test machine, so this runs against a MOCKED GitHub API: a
local HTTP server that answers like api.github.com does (docs.github.com/rest/packages:
versions list with `name` = digest, `Link` paging, DELETE by version id). It proves the request
shapes and paging, not GitHub's own behaviour.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from gpuship.reference import Repository
from gpuship.registry.errors import NotFound, RegistryAuthError
from gpuship.registry.ghcr import GhcrPackages

pytestmark = pytest.mark.integration

TOKEN = "ghs_mocked"
VERSIONS = [{"id": 1000 + n, "name": "sha256:" + f"{n:064x}"} for n in range(7)]


class _FakeGitHub(BaseHTTPRequestHandler):
    deleted: list[str] = []
    seen_auth: set[str] = set()

    def log_message(self, *args: object) -> None:
        return

    def _send(
        self, status: int, body: object = None, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.seen_auth.add(self.headers.get("Authorization", ""))
        url = urlparse(self.path)
        # Only a user-owned package exists: the org URL must 404 and the client fall back.
        if url.path != "/users/octo/packages/container/team%2Fapp/versions":
            self._send(404, {"message": "Not Found"})
            return
        query = parse_qs(url.query)
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        per_page = min(per_page, 3)  # force several pages
        chunk = VERSIONS[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(VERSIONS):
            host = self.headers["Host"]
            headers["Link"] = (
                f'<http://{host}{url.path}?per_page={per_page}&page={page + 1}>; rel="next"'
            )
        self._send(200, chunk, headers)

    def do_DELETE(self) -> None:
        self.deleted.append(self.path)
        self._send(204)


@pytest.fixture
def fake_github() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeGitHub.deleted = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_deletes_version_by_digest_across_pages(fake_github: str):
    packages = GhcrPackages(
        Repository("ghcr.io", "octo/team/app"),
        {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": fake_github},
    )
    ids = packages.version_ids()
    assert ids == {v["name"]: v["id"] for v in VERSIONS}
    packages.delete(str(VERSIONS[5]["name"]), ("old",))
    assert _FakeGitHub.deleted == ["/users/octo/packages/container/team%2Fapp/versions/1005"]
    assert _FakeGitHub.seen_auth == {f"Bearer {TOKEN}"}
    with pytest.raises(NotFound):
        packages.delete("sha256:" + "f" * 64, ())


def test_needs_a_token():
    with pytest.raises(RegistryAuthError, match="GITHUB_TOKEN"):
        GhcrPackages(Repository("ghcr.io", "octo/app"), {})
