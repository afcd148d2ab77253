"""A reverse proxy on 127.0.0.1 in front of a real registry that injects faults.

Each request gets a fault from a seeded random schedule: pass, drop the connection before
forwarding, drop it AFTER the registry applied the request (the answer is lost), answer 500,
answer 429 with Retry-After, or answer slowly. The Host header is forwarded unchanged, so the
registry's Location headers point back at the proxy.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

FAULTS = ("drop-before", "drop-after", "500", "429", "slow")
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


@dataclass
class FaultPlan:
    """Which faults to inject and how often; `log` records (method, path, fault)."""

    rate: float = 0.0
    seed: int = 0
    faults: tuple[str, ...] = FAULTS
    retry_after: str = "0"
    slow_s: float = 0.2
    # Only requests whose method is in `methods` get faults (None: all).
    methods: frozenset[str] | None = None
    # Stop injecting after this many faults (None: no limit).
    max_faults: int | None = None
    # Serve tags/list in pages of this size with `Link: rel="next"`, as distribution v3 does
    # (registry/handlers/tags.go at v3.0.0); the 2.8 registry behind always answers in full.
    tag_page_size: int | None = None
    log: list[tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def pick(self, method: str, path: str) -> str:
        with self._lock:
            roll, choice = self._random.random(), self._random.choice(self.faults)
            fault = "pass"
            injected = sum(entry[2] != "pass" for entry in self.log)
            budget_left = self.max_faults is None or injected < self.max_faults
            if (
                budget_left
                and (self.methods is None or method in self.methods)
                and roll < self.rate
            ):
                fault = choice
            self.log.append((method, path, fault))
            return fault


def _page_tags(
    path: str, headers: list[tuple[str, str]], data: bytes, page_size: int
) -> tuple[list[tuple[str, str]], bytes]:
    url = urlparse(path)
    query = parse_qs(url.query)
    size = min(int(query.get("n", [page_size])[0]), page_size)
    document = json.loads(data)
    tags = sorted(document.get("tags") or [])
    last = query.get("last", [""])[0]
    remaining = [tag for tag in tags if tag > last]
    page = remaining[:size]
    headers = [(k, v) for k, v in headers if k.lower() != "link"]
    if len(remaining) > size:
        next_url = f"{url.path}?{urlencode({'last': page[-1], 'n': size})}"
        headers.append(("Link", f'<{next_url}>; rel="next"'))
    return headers, json.dumps({"name": document.get("name"), "tags": page}).encode()


def _handler(upstream: tuple[str, int], plan: FaultPlan) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def _drop(self) -> None:
            self.close_connection = True
            with suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            fault = plan.pick(self.command, self.path)
            if fault == "drop-before":
                self._drop()
                return
            if fault == "500":
                self._reply(500, [("Content-Type", "text/plain")], b"injected failure")
                return
            if fault == "429":
                headers = [("Retry-After", plan.retry_after), ("Content-Type", "text/plain")]
                self._reply(429, headers, b"Too Many Requests (HAP429)")
                return
            connection = http.client.HTTPConnection(*upstream, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                answer = response.getheaders()
                status = response.status
            finally:
                connection.close()
            if fault == "drop-after":
                self._drop()
                return
            if fault == "slow":
                time.sleep(plan.slow_s)
            if plan.tag_page_size and status == 200 and "/tags/list" in self.path:
                answer, data = _page_tags(self.path, answer, data, plan.tag_page_size)
            with suppress(OSError):  # a client that timed out has closed the connection
                self._reply(status, answer, data)

        do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

    return Handler


@contextmanager
def fault_proxy(upstream_host: str, plan: FaultPlan) -> Iterator[str]:
    """Run the proxy; yields its `127.0.0.1:PORT` to use as the registry host."""
    host, port = upstream_host.rsplit(":", 1)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler((host, int(port)), plan))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
