"""A registry that goes down part-way: a reverse proxy on 127.0.0.1 that forwards to a real
registry until a request matches `fail_when`, then answers that request and every later one
with 503, as a registry behind a load balancer does while its backend is gone.

Minimal on purpose (issue 19's fault proxy, `bed/faults.py`, was not on main when this was
written); it injects one kind of fault: everything from the first matching request on fails.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


@dataclass
class Outage:
    """`fail_when(method, path)` starts the outage; `seen` logs (method, path, status)."""

    fail_when: Callable[[str, str], bool]
    down: bool = False
    seen: list[tuple[str, str, int]] = field(default_factory=list)


def _handler(upstream: tuple[str, int], outage: Outage) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            outage.seen.append((self.command, self.path, status))
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                with suppress(OSError):
                    self.wfile.write(body)

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            outage.down = outage.down or outage.fail_when(self.command, self.path)
            if outage.down:
                self._answer(503, [("Content-Type", "text/plain")], b"registry unavailable")
                return
            connection = http.client.HTTPConnection(*upstream, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                self._answer(response.status, response.getheaders(), response.read())
            finally:
                connection.close()

        do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

    return Handler


@contextmanager
def registry_outage(upstream_host: str, outage: Outage) -> Iterator[str]:
    """Run the proxy in front of `upstream_host`; yields the `127.0.0.1:PORT` to use instead."""
    host, port = upstream_host.rsplit(":", 1)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler((host, int(port)), outage))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
