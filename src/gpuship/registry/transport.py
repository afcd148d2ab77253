"""HTTP under the registry client: scheme choice, the command deadline, per-request timeouts,
bounded answers and retries with bounded backoff.

Time: every request runs under the command's `Deadline`. One attempt may take
`RetryPolicy.timeout_s` from sending to the last byte of the answer, never more than the time
left; a watchdog shuts the socket down when that passes, because a socket timeout alone only
bounds each read, and a server that trickles a byte a second never trips it. Streamed blobs
(large by nature) are bounded by the socket timeout per read and by the deadline. Every
timeout names the request.

Ends: an answer whose body has neither a Content-Length nor chunks ends where its connection
closes, which is also how a stalled or cut answer ends: an empty one to a GET is refused as cut
(retried), as is any answer whose read the watchdog ended; `document_of` tells callers that
parse a body whether a document that does not parse was cut (`RegistryUnavailable`, exit 3) or
sent that way (`InputError`), and refuses an empty body where a document belongs.

Size: answers are read here, at most the bytes `gpuship.limits` allows (`manifest-max-bytes`,
`json-max-bytes`, `registry-error-body-max-bytes`); one that announces or sends more is refused
(a manifest served without Content-Length that never ends stops at the limit).

Redirects are the client's to follow (`redirects.py`, one hop per `send`); a redirect's body is
never read, and a URL that is not http(s) (a redirect to `file://`) is refused here.

Retried: connection errors (but not a certificate that does not verify), timeouts and answers
broken mid-body, and the statuses of `retry.RETRY_STATUSES`, honouring `Retry-After` up to a
cap, else exponential backoff; never past the deadline. A request whose body is a stream cannot
be re-sent and is tried once. Every other retry of the registry adapter is listed in `retry.py`.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from gpuship.errors import InputError, LimitExceeded, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.registry.deadline import Deadline, DeadlineExceeded
from gpuship.registry.errors import RegistryRequestError
from gpuship.registry.origin import header_url
from gpuship.registry.redirects import MAX_REDIRECTS
from gpuship.registry.retry import RETRY_STATUSES, RetryPolicy, retry_after_seconds
from gpuship.registry.tls import UntrustedCertificate, certificate_error
from gpuship.registry.watchdog import Watch, WatchedAdapter, watching

_NETWORK_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
    urllib3.exceptions.HTTPError,
    OSError,
)
_READ_CHUNK = 64 << 10


def uses_plain_http(host: str, insecure: Sequence[str]) -> bool:
    """True for loopback hosts (as Docker does) and hosts listed in `registries.insecure`."""
    if host in insecure:
        return True
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    name = name.strip("[]")
    if name in insecure or name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Transport:
    """Sends requests under a deadline, with bounded answers and retries."""

    def __init__(
        self,
        session: requests.Session,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
        *,
        deadline: Deadline | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.session = session
        self.retry = retry
        self.deadline = deadline or Deadline(None)
        self.limits = limits
        self._sleep = sleep
        adapter = WatchedAdapter(max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        # Only requests that ask requests to follow redirects (the GitHub API) use this cap.
        session.max_redirects = MAX_REDIRECTS
        # Command-wide: shuts every connection down at the very end (blob streams outlive the
        # request that opened them).
        self._deadline_watch = Watch(self.deadline.until_end())
        self._deadline_watch.start()

    def close(self) -> None:
        """Stop the deadline's watchdog (the session is the caller's to close)."""
        self._deadline_watch.stop()

    def send(
        self, method: str, url: str, *, limit: str = "json_max_bytes", **kwargs: Any
    ) -> requests.Response:
        """Send one request, retrying transient failures; raise RegistryUnavailable when spent.

        The answer's body is read, at most the bytes of the limit named `limit` (an error
        answer: `registry_error_body_max_bytes`, cut there), unless `stream=True`. The final
        response is returned whatever its status (a last 5xx included); the caller maps
        statuses to errors.
        """
        what = f"{method} {_display(url)}"
        body = kwargs.get("data")
        replayable = body is None or isinstance(body, (bytes, str, dict, list))
        attempts = self.retry.attempts if replayable else 1
        attempt = 0
        reason = ""
        while True:
            attempt += 1
            left = self.deadline.remaining()
            if left <= 0:
                raise DeadlineExceeded(
                    f"{what} failed after {attempt - 1} tries ({reason}); "
                    f"{self.deadline.describe()} was reached"
                    if reason
                    else f"{what}: not sent, {self.deadline.describe()} was reached"
                )
            try:
                response = self._attempt(method, url, left, replayable, limit, kwargs)
            except _NETWORK_ERRORS as error:
                untrusted = certificate_error(error)
                if untrusted is not None:
                    raise UntrustedCertificate(
                        f"{what}: the registry's certificate is not trusted "
                        f"({untrusted.verify_message or untrusted.reason})",
                        host=urlsplit(url).netloc,
                    ) from None
                reason = _reason(error)
                if attempt == attempts or self.deadline.remaining() <= 0:
                    raise self._spent(what, attempt, reason) from None
                self._wait(self._backoff(attempt), what, attempt, reason)
                continue
            if response.status_code not in RETRY_STATUSES or attempt == attempts:
                return response
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            wait = min(wait, self.retry.max_wait_s) if wait is not None else self._backoff(attempt)
            if wait >= self.deadline.remaining():
                return response  # the caller reports the status; waiting would pass the deadline
            reason = f"HTTP {response.status_code}"
            response.close()
            self._sleep(wait)

    def probe(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        """One try, no retries, under the same time limits as `send`. The `requests` error is
        raised as it is, for a caller that tells kinds apart (is this TLS?); running out of
        time is `requests.Timeout` too."""
        left = self.deadline.remaining()
        if left <= 0:
            raise DeadlineExceeded(
                f"{method} {_display(url)}: not sent, {self.deadline.describe()} was reached"
            )
        try:
            return self._attempt(method, url, left, True, "json_max_bytes", kwargs)
        except _TimedOut as error:
            raise requests.Timeout(str(error)) from None

    def _attempt(
        self,
        method: str,
        url: str,
        left: float,
        replayable: bool,
        limit: str,
        kwargs: dict[str, Any],
    ) -> requests.Response:
        stream = bool(kwargs.get("stream"))
        timeout = min(self.retry.timeout_s, left)
        # A request body that is a stream (a large blob upload) takes what it takes; the socket
        # timeout and the deadline bound it. Everything else gets the per-request limit.
        watch = Watch(timeout if replayable else self.deadline.remaining())
        watch.start()
        with watching(watch, self._deadline_watch):
            try:
                response = self._one(method, url, timeout, kwargs)
                if not stream:
                    self._read_body(response, limit, method, url)
                    if watch.fired or self._deadline_watch.fired:
                        # The watchdog's shutdown reads as the end of a body the close delimits.
                        response.close()
                        raise _CutShort("the watchdog ended the answer")
            except _NETWORK_ERRORS as error:
                if watch.fired:
                    raise _TimedOut(f"timed out after {timeout:.3g} s") from error
                if self._deadline_watch.fired:
                    raise _TimedOut(f"stopped at {self.deadline.describe()}") from error
                raise
            finally:
                watch.stop()
        return response

    def _one(
        self, method: str, url: str, timeout: float, kwargs: dict[str, Any]
    ) -> requests.Response:
        options = {key: value for key, value in kwargs.items() if key != "stream"}
        connect = min(self.retry.connect_timeout_s, timeout)
        try:
            return self.session.request(
                method,
                url,
                stream=True,
                timeout=(connect, timeout),
                hooks={"response": _location_parses},
                **options,
            )
        except (requests.exceptions.InvalidSchema, requests.exceptions.InvalidURL) as error:
            raise RegistryRequestError(
                f"{method} {_display(url)}: not an http(s) URL a registry is reached at; "
                f"not sent ({type(error).__name__})",
                status=0,
            ) from None
        except requests.TooManyRedirects:
            raise RegistryRequestError(
                f"{method} {_display(url)}: more than {self.session.max_redirects} redirects",
                status=0,
            ) from None

    def _read_body(self, response: requests.Response, limit: str, method: str, url: str) -> None:
        """Read the whole answer into `response.content`, refusing more than the limit; a
        redirect's body is left unread (the client follows its Location and closes it)."""
        if response.is_redirect:
            return
        failed = response.status_code >= 400
        cap = self.limits.registry_error_body_max_bytes if failed else getattr(self.limits, limit)
        length = response.headers.get("Content-Length", "")
        if not failed and length.isdigit() and int(length) > cap:
            response.close()
            raise _too_large(method, url, limit, cap, f"it announces {int(length)} bytes")
        chunks: list[bytes] = []
        total = 0
        complete = True
        for chunk in response.raw.stream(_READ_CHUNK, decode_content=True):
            total += len(chunk)
            if total > cap:
                if not failed:
                    response.close()
                    raise _too_large(method, url, limit, cap, f"it sent more than {cap} bytes")
                chunks.append(chunk[: cap - (total - len(chunk))])
                complete = False
                break
            chunks.append(chunk)
        response._content = b"".join(chunks)
        if method == "GET" and not failed and not response._content and ended_by_close(response):
            response.close()
            raise _CutShort("headers came, then the connection closed with no body: stalled or cut")
        if complete:
            response.raw.release_conn()
        else:
            response.close()

    def _spent(self, what: str, attempts: int, reason: str) -> RegistryUnavailable:
        tries = "1 try" if attempts == 1 else f"{attempts} tries"
        if self.deadline.remaining() <= 0:
            return DeadlineExceeded(
                f"{what} failed after {tries} ({reason}); {self.deadline.describe()} was reached"
            )
        return RegistryUnavailable(f"{what} failed after {tries}: {reason}")

    def _wait(self, seconds: float, what: str, attempt: int, reason: str) -> None:
        if seconds >= self.deadline.remaining():
            tries = "1 try" if attempt == 1 else f"{attempt} tries"
            raise DeadlineExceeded(
                f"{what} failed after {tries} ({reason}); {self.deadline.describe()} leaves "
                "no time for another"
            )
        self._sleep(seconds)

    def _backoff(self, attempt: int) -> float:
        return float(min(self.retry.backoff_s * 2 ** (attempt - 1), self.retry.max_wait_s))


class _TimedOut(OSError):
    """A watchdog shut the connection down: the attempt ran out of time."""


class _CutShort(OSError):
    """An answer ended before its body could have: a stall or a cut, tried again."""


def ended_by_close(response: requests.Response) -> bool:
    """True when the answer's body ends where its connection closes (no Content-Length, no
    chunks; RFC 9112 §6.3): a body cut or stalled and closed ends the same way, so its end
    proves nothing."""
    if response.request.method == "HEAD" or response.status_code in (204, 304):
        return False
    headers = response.headers
    chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()
    return "Content-Length" not in headers and not chunked


@contextmanager
def document_of(response: requests.Response) -> Iterator[bytes]:
    """The body of an answer that must hold a document, for the caller to parse inside.

    An empty body is no document (a tag list, an index, a token answer always has one), and a
    document that does not parse in a body the connection's close ended was cut short: both
    RegistryUnavailable naming the request, never an empty result. A body that has its length
    and does not parse is what the registry sent: the parser's InputError stands.
    """
    what = f"{response.request.method} {_display(str(response.url))}"
    if not response.content:
        raise RegistryUnavailable(
            f"{what}: HTTP {response.status_code} with an empty body, where a document belongs"
        )
    try:
        yield response.content
    except LimitExceeded:
        raise
    except InputError as error:
        if not ended_by_close(response):
            raise
        raise RegistryUnavailable(
            f"{what}: the answer ended with its connection before its document did "
            f"(cut short): {error}"
        ) from None


def _reason(error: BaseException) -> str:
    """Why a request failed, in words: the timeout, else the error's kind."""
    if isinstance(error, _TimedOut | _CutShort):
        return str(error)
    if isinstance(error, requests.Timeout | urllib3.exceptions.TimeoutError | TimeoutError):
        return "timed out"
    if isinstance(error, requests.ConnectionError) and "refused" in str(error).lower():
        return "connection refused"
    return type(error).__name__


def _too_large(method: str, url: str, limit: str, cap: int, how: str) -> LimitExceeded:
    return LimitExceeded(f"the answer to {method} {_display(url)}", how, Limits.key(limit), cap)


def _location_parses(response: requests.Response, *_: Any, **__: Any) -> requests.Response:
    """The answer, once its redirect `Location` parses as a URL. requests reads it even where it
    follows no redirect (`Response.next`), and fails with a bare ValueError on one no parser
    takes (`http://[::1`); that answer is closed and refused here instead, naming the header."""
    location = response.headers.get("Location")
    if response.is_redirect and location is not None:
        try:
            header_url(response.url, location, "Location")
        except RegistryUnavailable:
            response.close()
            raise
    return response


def _display(url: str) -> str:
    """A URL without its query (upload URLs carry opaque state; token URLs carry scopes)."""
    return url.split("?", 1)[0]
