"""Start and stop the long-running service processes of the test bed.

Every service (registry, dockerd) runs as a child process whose output goes to a log file in
its own temp dir; when it fails to come up, the error carries the tail of that log so the
cause is visible in the pytest report instead of a bare timeout.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn


class ServiceStartError(RuntimeError):
    """A bed service did not become ready before its deadline."""


REQUIRE_BED_ENV = "GPUSHIP_REQUIRE_BED"


def missing_bed_part(reason: str) -> NoReturn:
    """Skip the calling test because part of the bed is not installed; fail instead when
    $GPUSHIP_REQUIRE_BED=1 (pytest --require-bed), so CI cannot pass on a bed that never ran."""
    import pytest

    if os.environ.get(REQUIRE_BED_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_BED_ENV}=1: the test bed is required)", pytrace=False)
    pytest.skip(reason)


def require_binary(name: str) -> str:
    """Return the absolute path of `name` on PATH, or skip the calling test with the reason."""
    path = shutil.which(name)
    if path is None:
        missing_bed_part(f"{name} not installed (binary not on PATH)")
    return path


def free_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1.

    The port is released before the service binds it, so another process could take it in
    between; callers retry with a new port when the service exits early.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a log file (empty when it does not exist)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ServiceProcess:
    """A child process with its log file; `stop()` ends it and whatever it spawned."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def running(self) -> bool:
        """True while the process has not exited."""
        return self.popen.poll() is None

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> None:
        """Call `probe` until it returns True; raise ServiceStartError on exit or deadline.

        The pause between probes grows from 20 ms to 250 ms, so a fast service is seen
        quickly and a slow one is not hammered.
        """
        deadline = time.monotonic() + timeout
        pause = 0.02
        while True:
            if not self.running():
                raise ServiceStartError(
                    f"{self.name} exited with status {self.popen.returncode} before it was "
                    f"ready; log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            with contextlib.suppress(OSError):
                if probe():
                    return
            if time.monotonic() > deadline:
                raise ServiceStartError(
                    f"{self.name} not ready after {timeout:.0f}s; log {self.log_path}:\n"
                    f"{log_tail(self.log_path)}"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.25)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the process group, then SIGKILL it if it outlives `timeout`."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout)


def start_service(
    name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
) -> ServiceProcess:
    """Start `argv` in its own process group with stdout and stderr going to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return ServiceProcess(name=name, popen=popen, log_path=log_path)


@contextlib.contextmanager
def running_service(service: ServiceProcess) -> Iterator[ServiceProcess]:
    """Yield `service` and stop it on exit, whatever happened in between."""
    try:
        yield service
    finally:
        service.stop()
