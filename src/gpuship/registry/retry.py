"""When the registry adapter tries again, and how hard: every retry rule in one place.

- A request that fails in transit (connection errors, timeouts, an answer broken mid-body) or
  answers one of RETRY_STATUSES is sent again by `Transport.send` under the command's
  RetryPolicy, waiting what `Retry-After` asks (retry_after_seconds, capped) or backing off
  exponentially, never past the deadline.
- Content that does not match its digest (a garbled answer) is read again, VERIFY_ATTEMPTS in
  all: manifest GETs (`RegistryClient.get_manifest`) and small blobs (`read_blob`).
- A write whose answer was lost or garbled: a blob push looks for the blob before it tries
  again and a manifest PUT is sent again (VERIFY_ATTEMPTS in all); a blob copy starts over
  (`copy_blob`'s attempts).

Cheap to import (no `requests`): `RegistryAccess` carries the policy to every stage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

# 408, 429 and the 5xx gateway and server errors: the list crane uses
# (google/go-containerregistry `pkg/v1/remote/options.go`).
RETRY_STATUSES = frozenset({408, 429, 499, 500, 502, 503, 504, 522})
# Content that does not match its digest (a body cut short, a wrong Docker-Content-Digest) is
# read again this many times in all before it is an error: a proxy or a registry node can
# garble one answer.
VERIFY_ATTEMPTS = 3


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: total attempts, first backoff (doubled per try), caps and timeouts."""

    attempts: int = 5
    backoff_s: float = 0.5
    max_wait_s: float = 10.0
    # One attempt, from sending to the last byte of the answer (streamed blobs: per read).
    timeout_s: float = 30.0
    connect_timeout_s: float = 10.0


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
