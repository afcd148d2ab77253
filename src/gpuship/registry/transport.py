"""HTTP under the registry client: scheme choice, timeouts and retries with bounded backoff.

Retried: connection errors and timeouts, 408, 429 and 5xx gateway/server errors (the list crane
uses, google/go-containerregistry `pkg/v1/remote/options.go`), honouring `Retry-After` (seconds
or an HTTP date) up to a cap, else exponential backoff. A request whose body is a stream cannot
be re-sent and is tried once.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from gpuship.errors import RegistryUnavailable

RETRY_STATUSES = frozenset({408, 429, 499, 500, 502, 503, 504, 522})
_NETWORK_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: total attempts, first backoff (doubled per try), caps and timeout."""

    attempts: int = 5
    backoff_s: float = 0.5
    max_wait_s: float = 10.0
    timeout_s: float = 30.0


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


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date), if parseable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


class Transport:
    """Sends requests with timeouts everywhere and bounded retries."""

    def __init__(
        self,
        session: requests.Session,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.session = session
        self.retry = retry
        self._sleep = sleep

    def send(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        """Send one request, retrying transient failures; raise RegistryUnavailable when spent.

        The final response is returned whatever its status (a last 5xx included); the caller
        maps statuses to errors.
        """
        body = kwargs.get("data")
        replayable = body is None or isinstance(body, (bytes, str, dict, list))
        attempts = self.retry.attempts if replayable else 1
        kwargs.setdefault("timeout", self.retry.timeout_s)
        kwargs.setdefault("allow_redirects", True)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self.session.request(method, url, **kwargs)
            except _NETWORK_ERRORS as error:
                if attempt == attempts:
                    raise RegistryUnavailable(
                        f"{method} {_display(url)} failed after {attempts} tries: "
                        f"{type(error).__name__}"
                    ) from None
                self._sleep(self._backoff(attempt))
                continue
            if response.status_code not in RETRY_STATUSES or attempt == attempts:
                return response
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            response.close()
            self._sleep(
                min(wait, self.retry.max_wait_s) if wait is not None else self._backoff(attempt)
            )

    def _backoff(self, attempt: int) -> float:
        return float(min(self.retry.backoff_s * 2 ** (attempt - 1), self.retry.max_wait_s))


def _display(url: str) -> str:
    """A URL without its query (upload URLs carry opaque state; token URLs carry scopes)."""
    return url.split("?", 1)[0]
