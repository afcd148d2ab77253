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

from gpuship.errors import RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.errors import NotFound, RegistryAuthError
from gpuship.registry.ghcr import GhcrPackages

pytestmark = pytest.mark.integration

TOKEN = "ghs_mocked"
VERSIONS = [{"id": 1000 + n, "name": "sha256:" + f"{n:064x}"} for n in range(7)]


class _FakeGitHub(BaseHTTPRequestHandler):
    deleted: list[str] = []
    seen_auth: set[str] = set()
    requests: list[str] = []
    next_origin: str | None = None  # where `Link` sends page 2 (None: this server)
    loop = False  # every `Link` names page 1 again

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
        self.requests.append(f"{self.headers['Host']}{self.path}")
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
            origin = self.next_origin or f"http://{self.headers['Host']}"
            following = 1 if self.loop else page + 1
            headers["Link"] = (
                f'<{origin}{url.path}?per_page={per_page}&page={following}>; rel="next"'
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
    _FakeGitHub.deleted, _FakeGitHub.requests = [], []
    _FakeGitHub.next_origin, _FakeGitHub.loop = None, False
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


def _packages(api: str) -> GhcrPackages:
    return GhcrPackages(
        Repository("ghcr.io", "octo/team/app"), {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": api}
    )


def test_a_link_to_another_origin_is_not_followed_with_the_token(fake_github: str):
    # Another port of the same machine is another origin (as for registries); a second
    # server there would be asked for page 2 with the token if the Link were followed.
    elsewhere = ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
    try:
        other = f"127.0.0.1:{elsewhere.server_address[1]}"
        _FakeGitHub.next_origin = f"http://{other}"
        with pytest.raises(RegistryUnavailable, match=f"Link outside .*'http://{other}/"):
            _packages(fake_github).version_ids()
    finally:
        elsewhere.shutdown()
        elsewhere.server_close()
    assert _FakeGitHub.requests, "the API was asked"
    assert not [r for r in _FakeGitHub.requests if r.startswith(other)]


def test_a_link_to_another_scheme_is_the_api_s_fault_not_the_user_s(fake_github: str):
    _FakeGitHub.next_origin = "ftp://127.0.0.1"
    with pytest.raises(RegistryUnavailable, match=r"Link outside .*'ftp://127\.0\.0\.1/"):
        _packages(fake_github).version_ids()


def test_a_link_back_to_a_page_already_read_ends_the_listing(fake_github: str):
    _FakeGitHub.loop = True
    with pytest.raises(RegistryUnavailable, match="links back to a page already read"):
        _packages(fake_github).version_ids()
    # page 1 of 3, then the same page once more at most: never an endless walk
    assert len(_FakeGitHub.requests) <= 5, _FakeGitHub.requests
