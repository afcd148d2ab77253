"""A registry that misbehaves on purpose (a small server on 127.0.0.1 made here): silence,
a byte a second, answers that never end, redirect loops, redirects to file://, JSON nested
past the recursion limit. Each ends in a typed error naming the request, within its time
limit and in bounded memory, never a traceback."""

from __future__ import annotations

import contextlib
import io
import socket
import socketserver
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.errors import InputError, LimitExceeded, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS
from gpuship.reference import Repository, parse_reference
from gpuship.registry.client import RegistryClient
from gpuship.registry.deadline import Deadline, DeadlineExceeded
from gpuship.registry.errors import RegistryRequestError
from gpuship.registry.redirects import MAX_REDIRECTS
from gpuship.registry.retry import RetryPolicy

pytestmark = pytest.mark.integration

DIGEST = "sha256:" + "a" * 64
AUDIT = Path(__file__).resolve().parents[2] / "data/gpu-readings/NVIDIA-H200-580.159.04.audit.json"
FAST = RetryPolicy(attempts=2, backoff_s=0.01, timeout_s=1.0, connect_timeout_s=1.0)
Behaviour = Callable[[socket.socket, bytes], None]


def _head(status: str, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode()


def _silent(conn: socket.socket, request: bytes) -> None:
    time.sleep(30)


def _trickle(conn: socket.socket, request: bytes) -> None:
    for byte in _head("200 OK", {"Content-Length": "2"}) + b"{}":
        conn.sendall(bytes([byte]))
        time.sleep(1)


def _endless(status: str, content_type: str) -> Behaviour:
    def answer(conn: socket.socket, request: bytes) -> None:
        conn.sendall(_head(status, {"Content-Type": content_type, "Connection": "close"}))
        chunk = b'{"manifests": [' + b" " * 65536
        with contextlib.suppress(OSError):
            for _ in range(1 << 20):  # 64 GiB if nobody stops reading
                conn.sendall(chunk)

    return answer


def _fixed(status: str, body: bytes, headers: dict[str, str] | None = None) -> Behaviour:
    # One answer per connection, said so: a client never sends on a connection being closed.
    def answer(conn: socket.socket, request: bytes) -> None:
        fields = {
            "Content-Length": str(len(body)),
            "Content-Type": "application/json",
            "Connection": "close",
        }
        conn.sendall(_head(status, fields | (headers or {})) + body)

    return answer


def _http(received: list[bytes]) -> list[bytes]:
    """The HTTP requests among what arrived (not the TLS hello of the client's HTTPS probe)."""
    return [data for data in received if data[:1].isalpha()]


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextlib.contextmanager
def hostile(behaviour: Behaviour) -> Iterator[tuple[str, list[bytes]]]:
    """Serve `behaviour` for every request; yields (host, requests received)."""
    received: list[bytes] = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            data = self.request.recv(65536)
            received.append(data)
            with contextlib.suppress(OSError):
                behaviour(self.request, data)

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_silence_ends_at_the_deadline_with_exit_3_naming_the_request():
    # In-process: the interpreter's start-up (seconds on a loaded machine) is not what this
    # measures.
    with hostile(_silent) as (host, _):
        stdout, stderr = io.StringIO(), io.StringIO()
        started = time.monotonic()
        code = main(
            ["promote", f"{host}/app@{DIGEST}", "--move", "stable", "--deadline", "3"],
            environ={},
            stdout=stdout,
            stderr=stderr,
        )
        elapsed = time.monotonic() - started
    message = stderr.getvalue()
    assert code == 3, message
    # The first try of HTTPS (a loopback registry may speak TLS) spends the time: the request
    # that follows is named.
    assert f"GET http://{host}/v2/app/manifests/{DIGEST}" in message
    assert "the command deadline (3 s) was reached" in message
    assert "Traceback" not in message
    # The work gets 3 s less the reserve kept for restoring tags; then it stops at once.
    assert 2 < elapsed < 3 + 1, elapsed


# Every command that reads a registry, each through the stage that makes its client: the image
# readers (inspect, verify, fleet, route IMAGE), the fleet inventory (route --fleet, audit
# --publish) and the release commands.
_REGISTRY_COMMANDS = [
    ["inspect", "{host}/app:v1"],
    ["verify", "{host}/app:v1", "--audit", "{audit}"],
    ["fleet", "{audit}", "--image", "{host}/app:v1"],
    ["route", "{host}/app:v1", "--format", "k8s"],
    ["route", "{host}/app:v1", "--fleet", "{host}/fleet"],
    ["audit", "--publish", "{host}/fleet"],
    ["history", "{host}/app:stable"],
    ["prune", "{host}/app"],
]


def _run(command: list[str], host: str, *extra: str, environ: dict[str, str] | None = None):
    """`gpuship COMMAND` in-process against `host`: exit code, stderr, seconds taken."""
    stderr = io.StringIO()
    argv = [*[part.format(host=host, audit=AUDIT) for part in command], *extra]
    started = time.monotonic()
    code = main(argv, environ=environ or {}, stdout=io.StringIO(), stderr=stderr)
    return code, stderr.getvalue(), time.monotonic() - started


@pytest.mark.parametrize("command", _REGISTRY_COMMANDS, ids=" ".join)
def test_every_command_reading_a_registry_stops_at_its_deadline(command: list[str]):
    # The registry access the command was given reaches the client made deep in its stage.
    with hostile(_silent) as (host, _):
        code, stderr, elapsed = _run(command, host, "--deadline", "2")
    assert code == 3, stderr
    assert "the command deadline (2 s) was reached" in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert elapsed < 2 + 1, elapsed


@pytest.mark.parametrize("attempts", [1, 3])
@pytest.mark.parametrize("command", _REGISTRY_COMMANDS, ids=" ".join)
def test_every_command_tries_a_request_as_often_as_registries_says(
    command: list[str], attempts: int
):
    # 503 is retried: each command sends its first request exactly `attempts` times, then stops.
    with hostile(_fixed("503 Service Unavailable", b"{}")) as (host, received):
        environ = {
            "GPUSHIP_REGISTRIES__ATTEMPTS": str(attempts),
            "GPUSHIP_REGISTRIES__BACKOFF": "0.01",
        }
        code, stderr, _ = _run(command, host, environ=environ)
    assert code == 3, stderr
    requests = _http(received)
    assert len(requests) == attempts, requests
    assert len(set(requests)) == 1, requests


@pytest.mark.parametrize("command", _REGISTRY_COMMANDS, ids=" ".join)
def test_every_command_cuts_a_request_at_the_request_timeout(command: list[str]):
    # A deadline far away: `registries: request-timeout` alone ends the one try.
    with hostile(_silent) as (host, received):
        environ = {
            "GPUSHIP_REGISTRIES__ATTEMPTS": "1",
            "GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "1",
        }
        code, stderr, elapsed = _run(command, host, "--deadline", "60", environ=environ)
    assert code == 3, stderr
    assert "the command deadline" not in stderr
    assert len(_http(received)) == 1
    assert elapsed < 10, elapsed


def test_a_byte_a_second_is_cut_at_the_request_timeout():
    with hostile(_trickle) as (host, received):
        client = RegistryClient(environ={}, retry=FAST)
        started = time.monotonic()
        with pytest.raises(RegistryUnavailable, match=r"GET .*/manifests/v1 failed after 2 tries"):
            client.get_manifest(parse_reference(f"{host}/app:v1"))
        elapsed = time.monotonic() - started
    assert len(_http(received)) == 2
    assert elapsed < 3 * FAST.timeout_s + 1.5, elapsed


def test_the_deadline_bounds_retries_too():
    with hostile(_silent) as (host, received):
        deadline = Deadline(1.5, reserve_s=0)
        client = RegistryClient(environ={}, retry=RetryPolicy(timeout_s=10), deadline=deadline)
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"GET .*/manifests/v1"):
            client.get_manifest(parse_reference(f"{host}/app:v1"))
        assert time.monotonic() - started < 2.5
    assert len(_http(received)) <= 1


@pytest.mark.parametrize("status", ["200 OK", "404 Not Found", "500 Internal Server Error"])
def test_an_answer_without_length_that_never_ends_stays_bounded(status: str):
    limits = DEFAULT_LIMITS
    with hostile(_endless(status, "application/vnd.oci.image.manifest.v1+json")) as (host, _):
        client = RegistryClient(environ={}, retry=FAST, limits=limits)
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises((LimitExceeded, RegistryRequestError, RegistryUnavailable)):
                client.get_manifest(parse_reference(f"{host}/app:v1"))
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert time.monotonic() - started < 10
    assert peak < 4 * limits.manifest_max_bytes + (8 << 20), peak


def test_manifest_over_the_limit_names_the_request_and_limit():
    body = b'{"schemaVersion": 2, "pad": "' + b"x" * (64 << 10) + b'"}'
    with hostile(_fixed("200 OK", body)) as (host, _):
        client = RegistryClient(
            environ={}, limits=DEFAULT_LIMITS.override(manifest_max_bytes=32 << 10)
        )
        with pytest.raises(
            LimitExceeded,
            match=r"manifests/v1: it announces \d+ bytes \(limit limits.manifest-max-bytes: 32768",
        ):
            client.get_manifest(parse_reference(f"{host}/app:v1"))


def test_redirect_loop_and_redirect_to_file_are_refused():
    loop = _fixed("307 Temporary Redirect", b"", {"Location": "/v2/app/manifests/v1"})
    with hostile(loop) as (host, received):
        client = RegistryClient(environ={}, retry=FAST)
        with pytest.raises(RegistryRequestError, match=f"more than {MAX_REDIRECTS} redirects"):
            client.get_manifest(parse_reference(f"{host}/app:v1"))
    assert len(_http(received)) == MAX_REDIRECTS + 1
    to_file = _fixed("302 Found", b"", {"Location": "file:///etc/passwd"})
    with hostile(to_file) as (host, _):
        client = RegistryClient(environ={}, retry=FAST)
        with pytest.raises(InputError, match=r"file:///etc/passwd' is not an http\(s\) URL"):
            client.get_manifest(parse_reference(f"{host}/app:v1"))


def test_json_nested_past_the_recursion_limit_is_a_clear_error():
    deep = b"[" * 100_000 + b"]" * 100_000
    with hostile(_fixed("200 OK", deep)) as (host, _):
        client = RegistryClient(environ={}, retry=FAST)
        with pytest.raises(LimitExceeded, match="JSON nests deeper than 64 levels"):
            client.list_tags(Repository(host, "app"))
    with hostile(_fixed("400 Bad Request", deep)) as (host, _):
        client = RegistryClient(environ={}, retry=FAST)
        with pytest.raises(RegistryRequestError, match="HTTP 400"):
            client.get_manifest(parse_reference(f"{host}/app:v1"))
