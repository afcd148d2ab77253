"""This machine's system and name: `uname`, os-release, the host name and the runner name.

An adapter: the audit's compat models are filled from what this process can read here, so
`compat/audit.py` stays pure (the caller hands it the runner and the time of the reading).
"""

from __future__ import annotations

import platform
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpuship.compat.audit import RunnerIdentity
from gpuship.compat.container import SystemReading


def this_runner(environ: Mapping[str, str], labels: Iterable[str] = ()) -> RunnerIdentity:
    """Who this machine is: its hostname and the runner name GitHub gives jobs and hooks."""
    return RunnerIdentity(
        hostname=socket.gethostname(),
        runner_name=environ.get("RUNNER_NAME") or None,
        labels=list(labels),
    )


def read_system(os_release: Path = Path("/etc/os-release")) -> SystemReading:
    """Kernel release and machine from `uname`, the OS from os-release's PRETTY_NAME."""
    return SystemReading(
        kernel=platform.release(), os=_pretty_name(os_release), machine=platform.machine()
    )


def _pretty_name(os_release: Path) -> str | None:
    try:
        lines = os_release.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"')
    return None
