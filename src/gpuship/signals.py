"""How a command is stopped: the signals that stop it, and holding or handling them.

The one handler at the CLI boundary (`gpuship.cli.main`) turns the first of these signals
into `gpuship.errors.Interrupted`; clean-up that must finish holds them here.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

# How CI systems and Kubernetes stop a process (GitHub Actions: SIGINT, then SIGTERM 7.5 s
# later, then SIGKILL); both end a command the same way, as `Interrupted`.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM arriving in the block wait until it ends: for clean-up that must
    finish (removing a container) when a second signal follows the first, as GitHub's SIGTERM
    follows its SIGINT. The last one that came is raised again after the block, to the
    handler that was in place.

    Python runs signal handlers in the main thread whichever thread the kernel picked, so the
    handlers are swapped rather than the main thread's signal mask blocked (a mask would not
    hold a signal delivered to another thread, and the load generator's and sampler's threads
    may still run).
    """
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)

    try:
        with stop_signals_handled_by(hold):
            yield
    finally:
        if held:
            signal.raise_signal(held[-1])


@contextlib.contextmanager
def stop_signals_handled_by(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """`handler` takes SIGINT and SIGTERM in the block; the handlers before it do after.
    Signal handlers belong to the main thread; elsewhere (a test calling `main` in a thread)
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, signal.SIG_DFL if before is None else before)
