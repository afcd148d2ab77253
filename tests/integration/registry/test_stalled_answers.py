"""A registry that sends its status line and headers, then nothing (`bed.faults`
`stall-after-headers`, in front of the real docker-registry): every command that reads it ends
with exit 3 and one line naming the request, within its deadline; never an empty answer taken
for an empty repository ("0 releases recorded", "0 tags", exit 0).

Both ways such an answer ends are covered: the registry closes the connection first (`closes`:
the body, delimited by the close, is empty) and the request timeout ends it first (`times
out`: gpuship's watchdog shuts the socket down, which reads as the same empty end).
"""

from __future__ import annotations

import contextlib
import io
import socketserver
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bed import faults
from bed.oci import make_image, push
from bed.registry import Registry
from bed.servers import answering, serving
from gpuship.cli.main import main
from gpuship.errors import RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.retry import RetryPolicy

pytestmark = pytest.mark.integration

AUDIT = Path(__file__).resolve().parents[2] / "data/gpu-readings/NVIDIA-H200-580.159.04.audit.json"
DEADLINE_S = 8
# Two tries of at most a second each; the stall outlasts a try in `times out`, not in `closes`.
ENVIRON = {
    "GPUSHIP_REGISTRIES__ATTEMPTS": "2",
    "GPUSHIP_REGISTRIES__BACKOFF": "0.01",
    "GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "1",
}
STALLS = {"closes": 0.3, "times out": 3.0}


@pytest.fixture(scope="module")
def released(registry: Registry) -> Iterator[tuple[str, str]]:
    """A repository with `v1` and `stable` tags and one recorded release of `stable`."""
    repository = "stall/app"
    digest = push(registry.url, repository, make_image([{"app/a.bin": b"a" * 100}]), tag="v1")
    code, _, stderr, _ = _gpuship(
        "promote", f"{registry.host}/{repository}@{digest}", "--move", "stable"
    )
    assert code == 0, stderr
    yield repository, digest


def _gpuship(*argv: str, environ: dict[str, str] | None = None) -> tuple[int, str, str, float]:
    """`gpuship ARGV` in-process: exit code, stdout, stderr, seconds taken."""
    stdout, stderr = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = main(list(argv), environ=environ or {}, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue(), time.monotonic() - started


# (command line, the requests that stall: method and a fragment of the path)
_CASES = {
    "history": (["history", "{host}/{repo}"], ("GET", "/tags/list")),
    "history of a tag": (["history", "{host}/{repo}:stable"], ("GET", "/tags/list")),
    "prune plan": (["prune", "{host}/{repo}"], ("GET", "/tags/list")),
    "promote": (["promote", "{host}/{repo}@{digest}", "--move", "prod"], ("GET", "/manifests/")),
    "inspect manifest": (["inspect", "{host}/{repo}:v1"], ("GET", "/manifests/")),
    "inspect config": (["inspect", "{host}/{repo}:v1"], ("GET", "/blobs/")),
    "verify": (["verify", "{host}/{repo}:v1", "--audit", str(AUDIT)], ("GET", "/manifests/")),
}


@pytest.mark.parametrize("stall", STALLS, ids=str)
@pytest.mark.parametrize("case", _CASES, ids=str)
def test_an_answer_that_stalls_after_its_headers_is_exit_3(
    registry: Registry, released: tuple[str, str], case: str, stall: str
):
    command, (method, fragment) = _CASES[case]
    repository, digest = released

    def stall_these(index: int, seen: str, path: str) -> str | None:
        return "stall-after-headers" if seen == method and fragment in path else None

    with faults.start(registry.host, hook=stall_these, stall_s=STALLS[stall]) as proxy:
        argv = [part.format(host=proxy.host, repo=repository, digest=digest) for part in command]
        code, stdout, message, elapsed = _gpuship(
            *argv, "--deadline", str(DEADLINE_S), environ=ENVIRON
        )
    stalled = [r for r in proxy.log if r.method == method and fragment in r.path]
    assert stalled, proxy.log  # the fault took effect
    assert code == 3, (message, stdout)
    assert message.startswith("gpuship: error: ") and message.count("\n") == 1, message
    # Named: the request (`GET http://HOST/v2/REPO/...`), or the blob stream (`blob D from
    # HOST/REPO`) that the reader was consuming when it ended.
    assert proxy.host in message and repository in message, message
    assert "Traceback" not in message
    assert elapsed < DEADLINE_S, elapsed


_HEAD = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        # Said to be empty (Content-Length: 0): still no tag list.
        (_HEAD + "Content-Length: 0\r\n\r\n", "HTTP 200 with an empty body, where a document"),
        # No length: the body ends at the close, half a document.
        (_HEAD + "Connection: close\r\n\r\n" + '{"name": "a", "tags": ["v1", "v', "cut short"),
    ],
    ids=["empty", "cut"],
)
def test_a_tag_list_that_is_empty_or_cut_is_no_tag_list(answer: str, says: str):
    with answering(answer.encode()) as host:
        client = RegistryClient(environ={}, retry=RetryPolicy(attempts=1, timeout_s=2))
        with pytest.raises(RegistryUnavailable, match=says) as raised:
            client.list_tags(Repository(host, "a"))
    assert f"GET http://{host}/v2/a/tags/list" in str(raised.value)


class _Trickle(socketserver.BaseRequestHandler):
    """Headers without a length, then a space every 0.3 s: no read waits long enough for the
    socket timeout, so only the watchdog ends the answer, and its shutdown reads as the end."""

    def handle(self) -> None:
        self.request.recv(65536)
        self.request.sendall((_HEAD + "Connection: close\r\n\r\n").encode())
        with contextlib.suppress(OSError):
            for _ in range(100):
                time.sleep(0.3)
                self.request.sendall(b" ")


def test_an_answer_the_watchdog_ends_is_a_timeout_not_a_short_body():
    with serving(_Trickle) as host:
        client = RegistryClient(environ={}, retry=RetryPolicy(attempts=1, timeout_s=1))
        started = time.monotonic()
        with pytest.raises(RegistryUnavailable, match=r"tags/list failed after 1 try: timed out"):
            client.list_tags(Repository(host, "a"))
    assert time.monotonic() - started < 3


def test_a_trickling_answer_stops_at_the_command_deadline():
    # Before, the watchdog lost the socket of an answer that closes its connection, and such
    # an answer ran for as long as the registry kept sending.
    with serving(_Trickle) as host:
        code, _, stderr, elapsed = _gpuship("history", f"{host}/a", "--deadline", "3")
    assert code == 3, stderr
    assert f"GET http://{host}/v2/a/tags/list" in stderr
    assert elapsed < 3 + 1, elapsed


class _EmptyTokenAnswer(BaseHTTPRequestHandler):
    """A registry asking for a Bearer token at its own /token, which answers 200 and nothing."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        if self.path.startswith("/token"):
            self.send_response(200)
            self.send_header("Content-Length", "0")
        else:
            realm = f"http://{self.headers['Host']}/token"
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer realm="{realm}",service="r"')
            self.send_header("Content-Length", "0")
        self.end_headers()


def test_an_empty_token_answer_is_no_token_and_no_credential_problem():
    with serving(_EmptyTokenAnswer) as host:
        client = RegistryClient(environ={}, retry=RetryPolicy(attempts=1, timeout_s=2))
        with pytest.raises(
            RegistryUnavailable, match=r"GET http://.*/token: HTTP 200 with an empty"
        ):
            client.list_tags(Repository(host, "a"))
