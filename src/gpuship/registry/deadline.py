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


_current: list[Deadline] = []


@contextmanager
def command_deadline(deadline: Deadline) -> Iterator[None]:
    """While a command runs, every registry client made without a deadline of its own takes
    this one. Set once, at the CLI boundary: a stage that reads an image deep down (inspect,
    lint, verify) is bounded without each layer passing the deadline on."""
    _current.append(deadline)
    try:
        yield
    finally:
        _current.remove(deadline)


def current_deadline() -> Deadline | None:
    """The deadline of the command running now, if the CLI set one."""
    return _current[-1] if _current else None
