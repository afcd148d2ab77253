"""A STAND-IN for GitHub's REST API: GitHub cannot be reached from the test machine.

A server on 127.0.0.1 that records every request it gets; each test's handler answers the
calls the code under test makes, as docs.github.com documents them (route's runner labels,
the comment action's pull-request comments). It proves request shapes, tokens and where they
go, not GitHub's own behaviour.

    class Handler(ApiHandler):
        def do_GET(self) -> None:
            self.record()
            self.reply(200, {...})

    api = StandInApi(Handler)
    with api.serving():           # api.url: http://127.0.0.1:PORT
        ...                       # api.requests: (method, path, headers)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandInApi(ThreadingHTTPServer):
    """The server: `requests` holds (method, path, headers with lower-case names)."""

    daemon_threads = True

    def __init__(self, handler: type[ApiHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Answer requests in a thread until the block ends."""
        threading.Thread(target=self.serve_forever, daemon=True).start()
        try:
            yield
        finally:
            self.shutdown()
            self.server_close()


class ApiHandler(BaseHTTPRequestHandler):
    """A handler's common part: quiet, records each request, answers JSON."""

    server: StandInApi

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on `requests`."""

    def record(self) -> None:
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.server.requests.append((self.command, self.path, headers))

    def authorization(self) -> str:
        return self.headers.get("Authorization", "")

    def reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length", "0"))
        return dict(json.loads(self.rfile.read(length)))
