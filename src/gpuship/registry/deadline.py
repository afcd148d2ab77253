"""The command's deadline: how long it may still wait on registries.

Kept apart from the transport (no `requests` here), so the CLI can set a command's deadline
without paying for the HTTP stack on commands that never use it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gpuship.errors import RegistryUnavailable

# Of the deadline, this share (at most DEADLINE_RESERVE_MAX_S) is kept back for undoing a
# failed release: a run that spent its whole budget on the work could not put tags back.
DEADLINE_RESERVE_SHARE = 0.2
DEADLINE_RESERVE_MAX_S = 30.0


class DeadlineExceeded(RegistryUnavailable):
    """The command's deadline passed before a request could be sent or answered."""


class Deadline:
    """When a command stops waiting on registries: a budget in seconds from its start.

    Part of it is kept back (`reserve_s`) for `cleanup()`: undoing a failed release gets time
    even when the work ran out of it.
    """

    def __init__(
        self,
        seconds: float | None,
        *,
        reserve_s: float | None = None,
        start: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self._end = math.inf if seconds is None else (clock() if start is None else start) + seconds
        if reserve_s is None and seconds is not None:
            reserve_s = min(seconds * DEADLINE_RESERVE_SHARE, DEADLINE_RESERVE_MAX_S)
        self._reserve = reserve_s or 0.0
        self._cleanup = False

    def remaining(self) -> float:
        """Seconds left for the current phase (the work, or the cleanup after it)."""
        end = self._end if self._cleanup else self._end - self._reserve
        return end - self._clock()

    def until_end(self) -> float:
        """Seconds left until the very end, the reserve included."""
        return self._end - self._clock()

    @contextmanager
    def cleanup(self) -> Iterator[None]:
        """Let what runs inside spend the reserve too."""
        previous, self._cleanup = self._cleanup, True
        try:
            yield
        finally:
            self._cleanup = previous

    def describe(self) -> str:
        """`the command deadline (120 s)`, for messages."""
        return f"the command deadline ({self.seconds:g} s)" if self.seconds else "no deadline"
