"""Small HTTP servers on 127.0.0.1 that a test makes itself, for answers no real registry
gives (a redirect to a URL with credentials, a digest header of an unknown algorithm, a body
cut where the connection closes).

    with serving(Handler) as host:       # any socketserver handler class
        ...                               # host: "127.0.0.1:PORT"
    with answering(b"HTTP/1.1 307 ...") as host:
        ...                               # every request gets these bytes, then the close
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


@contextmanager
def serving(handler: type[socketserver.BaseRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a free port of 127.0.0.1 until the block ends; yields the host."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def answering(answer: bytes) -> Iterator[str]:
    """A server that reads a request, sends `answer` as it is, and closes the connection."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            self.request.sendall(answer)

    with serving(Handler) as host:
        yield host
