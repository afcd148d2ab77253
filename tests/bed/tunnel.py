"""A proxy that only tunnels (HTTP CONNECT), as corporate proxies carry HTTPS: the client's TLS
runs end to end with the registry through it. It notes each target it was asked for."""

from __future__ import annotations

import contextlib
import http.server
import selectors
import socket
import threading
from collections.abc import Iterator

# Every variable requests reads to pick a proxy, in both spellings: a test or bench that sets
# one clears the others first, so nothing from the calling shell routes its requests.
PROXY_VARIABLES = tuple(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    for name in (base, base.lower())
)


class _Tunnel(http.server.BaseHTTPRequestHandler):
    """Answers CONNECT only: notes the target, then relays bytes both ways."""

    targets: list[str]  # set by `tunnelling_proxy`'s subclass

    def do_CONNECT(self) -> None:
        self.targets.append(self.path)
        host, port = self.path.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            _relay(self.connection, upstream)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def _relay(one: socket.socket, other: socket.socket) -> None:
    """Bytes both ways until either side closes or resets (or 10 s pass with nothing to
    carry)."""
    peer = {one: other, other: one}
    with selectors.DefaultSelector() as selector:
        for end in peer:
            selector.register(end, selectors.EVENT_READ)
        while events := selector.select(timeout=10):
            for key, _ in events:
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(65536)
                    if data:
                        peer[source].sendall(data)
                except OSError:  # a reset is a close, as a refused handshake ends it
                    data = b""
                if not data:
                    return


@contextlib.contextmanager
def tunnelling_proxy() -> Iterator[tuple[str, list[str]]]:
    """(the proxy's URL, the CONNECT targets it carried)."""
    targets: list[str] = []
    handler = type("Noted", (_Tunnel,), {"targets": targets})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", targets
    finally:
        server.shutdown()
        server.server_close()
