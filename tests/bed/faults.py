"""A fault-injecting HTTP proxy on 127.0.0.1 in front of a real registry.

    from bed import faults

    with faults.start(registry.host, {3: "reset-before", 7: "gone"}) as proxy:
        ...  # use proxy.host ("127.0.0.1:PORT") as the registry host
    proxy.log  # [Request(index, method, path, fault, applied)] in arrival order

The plan maps a request's index (0 is the first request the proxy receives, counted over all
connections in arrival order) to a fault; every other request passes through unchanged. The
Host header is forwarded as sent, so the registry's Location headers point back at the proxy.

| fault | the client sees | the registry applied the request |
|---|---|---|
| `reset-before` | the connection closed, no answer | no |
| `reset-after` | the connection closed, no answer | yes |
| `500`, `502`, `503` | that status with a short text body (`error_body=`) | no |
| `429` | 429 with `Retry-After: 1` (`retry_after=`) | no |
| `cut-body` | the registry's status and headers, half the body, then the connection closes | yes |
| `stall` | nothing for `stall_s` seconds (default 30), then the connection closes | yes |
| `stall-after-headers` | status, headers (no Content-Length), nothing for `stall_s`, close | yes |
| `truncated-manifest` | half the manifest of a GET, Content-Length to match (wrong bytes) | yes |
| `wrong-digest` | `Docker-Content-Digest` replaced by a digest of other bytes | yes |
| `gone` | this request and every later one fail: the proxy closes it and stops listening | no |
| `delay` | the registry's usual answer, `delay_s` seconds late (default 0.4) | yes, late |
| `echo` | `echo_status` (403) quoting the request's `Authorization`, as `echo_style` says | no |
| `forge-location` | 307 with `Location: <forged>` (default `http://[::1`) | no |
| `forge-link` | the registry's answer plus `Link: <forged>; rel="next"` | yes |
| `forge-challenge` | 401 with `WWW-Authenticate: Bearer realm="<forged>",service="x"` | no |

`echo` is a registry, proxy or WAF that quotes the request in an error body, its credential
included; it applies only to a request that carries an `Authorization` header (others pass,
`applied=False`). `echo_style` is how the body quotes it: `header-dump` (the request's header
lines as text, as a WAF block page or a debugging proxy writes them), `go-map` (an OCI error
whose message holds Go's `%v` of the `http.Header`, `map[Authorization:[Basic ...] ...]`),
`json-headers` (the headers as a JSON object of lists) or `bare` (the credential alone,
after its scheme: `invalid token <value>`). The `forge-*` faults answer a header whose value
is `forged=` (default `http://[::1`, which no URL parser takes).

`delay` holds the request `delay_s` seconds before forwarding it: the registry applies it that
late, as a registry slow to delete does (the window between a client's last check and its
DELETE taking effect). The proxy serves each connection on its own thread, so other clients'
requests pass meanwhile.

A fault that cannot apply to its request (`cut-body` on an answer without a body,
`stall-after-headers` on a HEAD, `truncated-manifest` on anything but a manifest GET,
`wrong-digest` on an answer without the header) lets it pass; the log says so
(`applied=False`). Without Content-Length (or chunks), the body of a `stall-after-headers`
answer is what comes before the close: nothing.

`hook(index, method, path)`, if given, runs before a request is forwarded: a test can change
the registry behind a client's back at a chosen moment, and pick a fault by what the request
is (the fault it returns, if any, replaces the plan's for that request). `page_tags=N` serves
tags/list in pages of N with `Link: rel="next"`, as distribution v3 does; the 2.8 registry behind
always answers in full.

`lag_s=S` makes the registry eventually consistent, as replicated registries, CDNs in front of
one and geo-replicated ACR are (a lagging tag read): for S seconds after a tag's manifest PUT
is applied, a GET or HEAD of that tag answers what the registry held right before the PUT, the
old manifest (a stale digest) or 404 for a tag that did not exist. `lag_tags` (a regex, full
match) limits it to some tags. Reads by digest and tag lists are never stale.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

FAULTS = (
    "reset-before",
    "reset-after",
    "500",
    "502",
    "503",
    "429",
    "cut-body",
    "stall",
    "stall-after-headers",
    "truncated-manifest",
    "wrong-digest",
    "gone",
    "delay",
    "echo",
    "forge-location",
    "forge-link",
    "forge-challenge",
)
ECHO_STYLES = ("header-dump", "go-map", "json-headers", "bare")
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}
UPSTREAM_TIMEOUT_S = 30

Hook = Callable[[int, str, str], "str | None"]
_Answer = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body


@dataclass(frozen=True)
class Request:
    """One request the proxy received, the fault planned for it and whether it took effect."""

    index: int
    method: str
    path: str
    fault: str
    applied: bool


@dataclass
class FaultProxy:
    """A running proxy: `host` to use as the registry, `log` of what it saw."""

    upstream: tuple[str, int]
    plan: Mapping[int, str]
    stall_s: float = 30.0
    retry_after: str = "1"
    hook: Hook | None = None
    delay_s: float = 0.4
    page_tags: int | None = None
    error_body: bytes = b"injected failure"
    lag_s: float = 0.0
    lag_tags: str = ".*"
    echo_style: str = "header-dump"
    echo_status: int = 403
    forged: str = "http://[::1"
    log: list[Request] = field(default_factory=list)
    host: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.plan.values()) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
        if self.echo_style not in ECHO_STYLES:
            raise ValueError(f"unknown echo style {self.echo_style!r}; known: {ECHO_STYLES}")
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._gone = False
        # manifest path by tag -> (until, the answer a read got right before its last PUT)
        self._stale: dict[str, tuple[float, _Answer]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening and end stalls; idempotent."""
        self._stopped.set()
        self._close_listener()

    def count(self) -> int:
        """How many requests arrived so far."""
        with self._lock:
            return len(self.log)

    def _next(self, method: str, path: str) -> tuple[int, str]:
        with self._lock:
            index = len(self.log)
            fault = "gone" if self._gone else self.plan.get(index, "pass")
            if fault == "gone":
                self._gone = True
            self.log.append(Request(index, method, path, fault, fault != "pass"))
            return index, fault

    def _override(self, index: int, fault: str) -> str:
        if fault not in FAULTS:
            raise ValueError(f"hook chose unknown fault {fault!r}")
        with self._lock:
            entry = self.log[index]
            self.log[index] = Request(entry.index, entry.method, entry.path, fault, True)
            self._gone = self._gone or fault == "gone"
        return fault

    def _not_applied(self, index: int) -> None:
        with self._lock:
            entry = self.log[index]
            self.log[index] = Request(entry.index, entry.method, entry.path, entry.fault, False)

    def lagging(self, path: str) -> bool:
        """True if reads of this manifest path are stale after a PUT (`lag_s`, `lag_tags`)."""
        tag = _manifest_tag(path)
        return bool(self.lag_s) and tag is not None and re.fullmatch(self.lag_tags, tag) is not None

    def stale(self, path: str) -> _Answer | None:
        """The stale answer a read of `path` gets now, if it is within its lag."""
        with self._lock:
            found = self._stale.get(urlparse(path).path)
        if found is None or time.monotonic() >= found[0]:
            return None
        return found[1]

    def written(self, path: str, before: _Answer) -> None:
        """A PUT of `path` was applied: reads answer `before` for `lag_s` seconds."""
        with self._lock:
            self._stale[urlparse(path).path] = (time.monotonic() + self.lag_s, before)

    def _close_listener(self) -> None:
        # shutdown() waits for serve_forever to return, so it runs off the handler thread.
        def close() -> None:
            with suppress(OSError):
                self._server.shutdown()
                self._server.server_close()

        threading.Thread(target=close, daemon=True).start()


def start(
    upstream: str,
    plan: Mapping[int, str] | None = None,
    *,
    stall_s: float = 30.0,
    retry_after: str = "1",
    hook: Hook | None = None,
    page_tags: int | None = None,
    error_body: bytes = b"injected failure",
    delay_s: float = 0.4,
    lag_s: float = 0.0,
    lag_tags: str = ".*",
    echo_style: str = "header-dump",
    echo_status: int = 403,
    forged: str = "http://[::1",
) -> FaultProxy:
    """Start a proxy in front of `upstream` (`HOST:PORT`) injecting `plan`; stop it with
    `.stop()` or use it as a context manager."""
    host, port = upstream.rsplit(":", 1)
    return FaultProxy(
        (host, int(port)),
        dict(plan or {}),
        stall_s,
        retry_after,
        hook,
        page_tags=page_tags,
        error_body=error_body,
        delay_s=delay_s,
        lag_s=lag_s,
        lag_tags=lag_tags,
        echo_style=echo_style,
        echo_status=echo_status,
        forged=forged,
    )


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle's algorithm the second waits for
        # the client's delayed ACK (40 ms a request).
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            return

        def _drop(self) -> None:
            self.close_connection = True
            with suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def _reply(
            self, status: int, headers: list[tuple[str, str]], body: bytes, sent: int | None = None
        ) -> None:
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body if sent is None else body[:sent])
            if sent is not None:
                self.wfile.flush()
                self._drop()

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            index, fault = proxy._next(self.command, self.path)
            if proxy.hook is not None and fault != "gone":
                chosen = proxy.hook(index, self.command, self.path)
                if chosen is not None:
                    fault = proxy._override(index, chosen)
            if fault == "gone":
                self._drop()
                proxy._close_listener()
                return
            if fault == "reset-before":
                self._drop()
                return
            if fault == "delay":
                proxy._stopped.wait(proxy.delay_s)
            if fault in ("500", "502", "503"):
                self._reply(int(fault), [("Content-Type", "text/plain")], proxy.error_body)
                return
            if fault == "429":
                headers = [("Retry-After", proxy.retry_after), ("Content-Type", "text/plain")]
                self._reply(429, headers, b"Too Many Requests (HAP429)")
                return
            if fault == "echo" and self.headers.get("Authorization"):
                content_type, echoed = _echo(
                    proxy.echo_style, self.command, self.path, self.headers
                )
                self._reply(proxy.echo_status, [("Content-Type", content_type)], echoed)
                return
            if fault == "forge-location":
                self._reply(307, [("Location", proxy.forged)], b"")
                return
            if fault == "forge-challenge":
                challenge = f'Bearer realm="{proxy.forged}",service="x"'
                self._reply(401, [("WWW-Authenticate", challenge)], b"")
                return
            stale = proxy.stale(self.path) if self.command in ("GET", "HEAD") else None
            if stale is not None and fault == "pass":
                with suppress(OSError):
                    self._reply(*stale)
                return
            before = self._read_before() if self.command == "PUT" else None
            status, answer, data = self._upstream(body)
            if before is not None and status in (200, 201):
                proxy.written(self.path, before)
            if fault in ("reset-after", "stall"):
                if fault == "stall":
                    proxy._stopped.wait(proxy.stall_s)
                self._drop()
                return
            if fault == "stall-after-headers" and self.command != "HEAD":
                self._stall_after_headers(status, answer)
                return
            if proxy.page_tags and status == 200 and "/tags/list" in self.path:
                answer, data = _page_tags(self.path, answer, data, proxy.page_tags)
            sent = None
            applied = fault != "echo"  # a request without a credential has none to echo
            if fault == "forge-link":
                answer = [*answer, ("Link", f'<{proxy.forged}>; rel="next"')]
            elif fault == "cut-body":
                applied = self.command != "HEAD" and len(data) >= 2
                sent = len(data) // 2 if applied else None
            elif fault == "truncated-manifest":
                applied = _is_manifest_get(self.command, self.path) and status == 200
                data = data[: len(data) // 2] if applied else data
            elif fault == "wrong-digest":
                applied = any(k.lower() == "docker-content-digest" for k, _ in answer)
                answer = [_wrong_digest(k, v) for k, v in answer]
            if not applied or fault == "stall-after-headers":  # a HEAD has no body to stall
                proxy._not_applied(index)
            with suppress(OSError):  # a client that timed out has closed the connection
                self._reply(status, answer, data, sent)

        def _stall_after_headers(self, status: int, headers: list[tuple[str, str]]) -> None:
            # Without Content-Length or chunking the body is whatever comes before the close:
            # here, nothing. A client that reads that as an empty answer reads a stall as one.
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            with suppress(OSError):
                self.wfile.flush()
            proxy._stopped.wait(proxy.stall_s)
            self._drop()

        def _read_before(self) -> _Answer | None:
            """What a read of the tag this PUT writes got right before it (when it lags)."""
            if not proxy.lagging(self.path):
                return None
            skip = {"content-type", "content-length"}
            headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
            headers["Accept"] = _ANY_MANIFEST
            return self._upstream(b"", "GET", headers)

        def _upstream(
            self, body: bytes, method: str | None = None, headers: dict[str, str] | None = None
        ) -> _Answer:
            connection = http.client.HTTPConnection(*proxy.upstream, timeout=UPSTREAM_TIMEOUT_S)
            if headers is None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
            headers = {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}
            try:
                connection.request(method or self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            finally:
                connection.close()

        do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

    return Handler


_ANY_MANIFEST = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    )
)
_TAG_PATH = re.compile(r"/v2/.+/manifests/([A-Za-z0-9_][A-Za-z0-9._-]{0,127})")


def _manifest_tag(path: str) -> str | None:
    """The tag a manifest path names (None: a digest, or not a manifest)."""
    found = _TAG_PATH.fullmatch(urlparse(path).path)
    return found.group(1) if found else None


def _echo(style: str, method: str, path: str, headers: Mapping[str, str]) -> tuple[str, bytes]:
    """(content type, body) of an error answer quoting the request's headers in `style`;
    `Authorization` first (a message cut at 300 characters still holds it)."""
    lines = sorted(
        ((key, value) for key, value in headers.items() if key.lower() != "content-length"),
        key=lambda item: item[0].lower() != "authorization",
    )
    if style == "header-dump":
        dump = "".join(f"{key}: {value}\n" for key, value in lines)
        return (
            "text/plain",
            f"Request blocked by policy.\n{method} {path} HTTP/1.1\n{dump}".encode(),
        )
    if style == "go-map":  # what a Go registry logs of the headers it judged
        shown = " ".join(f"{key}:[{value}]" for key, value in lines if key in _JUDGED)
        error = {"code": "DENIED", "message": f"rejected request with headers map[{shown}]"}
        return "application/json", json.dumps({"errors": [error]}).encode()
    if style == "json-headers":
        document = {"error": "forbidden", "headers": {key: [value] for key, value in lines}}
        return "application/json", json.dumps(document).encode()
    credential = headers.get("Authorization", "").partition(" ")[2]
    return "text/plain", f"invalid token {credential}".encode()


_JUDGED = ("Authorization", "User-Agent")


def _is_manifest_get(method: str, path: str) -> bool:
    return method == "GET" and "/manifests/" in urlparse(path).path


def _wrong_digest(key: str, value: str) -> tuple[str, str]:
    if key.lower() != "docker-content-digest":
        return key, value
    return key, "sha256:" + hashlib.sha256(b"not " + value.encode()).hexdigest()


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
