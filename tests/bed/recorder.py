"""A recording reverse proxy in front of a bed registry, and the blob storage it redirects to.

The proxy is the registry as clients see it (its own `127.0.0.1:PORT`, optionally HTTPS with a
certificate from the bed CA, TLS terminated here as nginx in front of registry:2 would). Every
request's `Authorization` header is reported to the credential ledger under the proxy's host.
The Host header is forwarded unchanged (and `X-Forwarded-Proto: https` behind TLS), so the
registry's `Location` headers point back at the proxy.

Options: `read_only` answers writes with 405 `UNSUPPORTED` (a public registry for bases);
`storage` makes blob GETs answer 307 to a `BlobStorage` on another port, the way registries
send blob downloads to S3 or a CDN with a signed URL; the storage reports what it receives too.
"""

from __future__ import annotations

import contextlib
import http.client
import secrets
import ssl
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bed.ledger import CredentialLedger
from bed.pki import ServerCert

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}
_BLOB_GET = "/blobs/sha256:"


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, whether sent with Content-Length or chunked (dockerd's PATCHes)."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _reply(
    handler: BaseHTTPRequestHandler,
    status: int,
    headers: list[tuple[str, str]],
    body: bytes,
) -> None:
    handler.send_response(status)
    length = str(len(body))
    for key, value in headers:
        if key.lower() == "content-length":
            # A HEAD answer states the length of what a GET would return.
            length = value if handler.command == "HEAD" else length
        elif key.lower() not in _HOP_HEADERS:
            handler.send_header(key, value)
    handler.send_header("Content-Length", length)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


@dataclass
class BlobStorage:
    """Object storage on its own port: blobs stashed by the proxy, served by unguessable path."""

    ledger: CredentialLedger
    host: str = ""
    blobs: dict[str, bytes] = field(default_factory=dict)
    served: int = 0

    def stash(self, data: bytes) -> str:
        key = secrets.token_hex(16)
        self.blobs[key] = data
        return f"http://{self.host}/{key}?X-Amz-Signature={secrets.token_hex(8)}"


def _storage_handler(storage: BlobStorage) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            storage.ledger.record(storage.host, self.headers.get("Authorization"))
            data = storage.blobs.get(self.path.split("?", 1)[0].strip("/"))
            if data is None:
                _reply(self, 404, [], b"no such object")
                return
            storage.served += 1
            _reply(self, 200, [("Content-Type", "application/octet-stream")], data)

    return Handler


@dataclass
class RecordingProxy:
    """What the proxy fronts and how; `host` is set when it serves."""

    upstream: str
    ledger: CredentialLedger
    tls: ServerCert | None = None
    read_only: bool = False
    storage: BlobStorage | None = None
    host: str = ""
    requests: list[tuple[str, str]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}"


def _proxy_handler(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    context: ssl.SSLContext | None = None
    if proxy.tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(proxy.tls.cert_path), str(proxy.tls.key_path))
    upstream_host, upstream_port = proxy.upstream.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            if context is not None:
                # Handshake in this request's thread, so a slow client blocks nobody else.
                self.request = context.wrap_socket(self.request, server_side=True)
            super().setup()

        def log_message(self, *args: object) -> None:
            return

        def _forward(self) -> None:
            proxy.ledger.record(proxy.host, self.headers.get("Authorization"))
            proxy.requests.append((self.command, self.path))
            body = _read_body(self)
            if proxy.read_only and self.command not in ("GET", "HEAD"):
                _reply(
                    self,
                    405,
                    [("Content-Type", "application/json")],
                    b'{"errors":[{"code":"UNSUPPORTED","message":"read-only registry"}]}',
                )
                return
            # Every header line as sent: dockerd repeats Accept once per manifest type.
            headers = [
                (k, v)
                for k, v in self.headers.items()
                if k.lower() not in _HOP_HEADERS and k.lower() != "content-length"
            ]
            if body or self.command in ("PUT", "POST", "PATCH"):
                headers.append(("Content-Length", str(len(body))))
            if context is not None:
                headers.append(("X-Forwarded-Proto", "https"))
            connection = http.client.HTTPConnection(upstream_host, int(upstream_port), timeout=60)
            try:
                connection.putrequest(self.command, self.path, skip_host=True)
                for key, value in headers:
                    connection.putheader(key, value)
                connection.endheaders(body or None)
                response = connection.getresponse()
                data = response.read()
                answer, status = response.getheaders(), response.status
            finally:
                connection.close()
            if (
                proxy.storage is not None
                and self.command == "GET"
                and status == 200
                and _BLOB_GET in self.path
            ):
                location = proxy.storage.stash(data)
                _reply(self, 307, [("Location", location)], b"")
                return
            with contextlib.suppress(OSError):  # a client that gave up has closed the socket
                _reply(self, status, answer, data)

        do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # Failed handshakes are expected (clients probing TLS, untrusted-CA tests); stay quiet.
        if not isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextlib.contextmanager
def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def run_storage(storage: BlobStorage) -> Iterator[BlobStorage]:
    """Serve `storage` (sets `.host`) until the context exits."""
    with _serve(_storage_handler(storage)) as host:
        storage.host = host
        yield storage


@contextlib.contextmanager
def run_proxy(proxy: RecordingProxy) -> Iterator[RecordingProxy]:
    """Serve `proxy` (sets `.host`) until the context exits."""
    with _serve(_proxy_handler(proxy)) as host:
        proxy.host = host
        yield proxy
