"""Read what decides whether this host's GPU services come back by themselves: the boot state
and order of Docker and the NVIDIA units, the toolkit's mode, the device nodes and their
`/dev/char` links (`compat.readiness.ReadinessReadings`).

An adapter. Every reader takes the host's root directory and a command runner, so tests feed
fixture hosts; a reader that cannot read returns None (unknown), never raises: a missing
`systemctl` or an unreadable file is a gap in what we know, not a fact about the host.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuship.compat.readiness import GpuContainer, ReadinessReadings, UnitState
from gpuship.documents import load_toml
from gpuship.errors import InputError

# The units whose boot state the readiness rules judge: the engine (or its socket, which starts
# it on the first request), the daemon keeping the driver loaded, the toolkit's CDI refresh
# (v1.18.0 on: a service and a path unit that watches the driver's modules), and the MIG
# layout's manager (nvidia-mig-parted's systemd service).
DOCKER_UNITS = ("docker.service", "docker.socket")
PERSISTENCED_UNIT = "nvidia-persistenced.service"
CDI_REFRESH_UNITS = ("nvidia-cdi-refresh.service", "nvidia-cdi-refresh.path")
MIG_MANAGER_UNIT = "nvidia-mig-manager.service"
READ_UNITS = (*DOCKER_UNITS, PERSISTENCED_UNIT, *CDI_REFRESH_UNITS, MIG_MANAGER_UNIT)
# nvidia-container-toolkit's runtime configuration (`nvidia-ctk config`); `mode` sits in the
# [nvidia-container-runtime] table and defaults to "auto" when absent.
TOOLKIT_CONFIG = "etc/nvidia-container-runtime/config.toml"
_CONFIG_LIMIT = 1 << 20
_COMMAND_TIMEOUT_S = 10
# /dev/nvidiactl, /dev/nvidia0.., /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset.
_NODE = re.compile(r"nvidia(?:ctl|\d+|-uvm|-uvm-tools|-modeset)")


@dataclass(frozen=True)
class CommandOutput:
    """What a command printed, and its exit status."""

    returncode: int
    stdout: str
    stderr: str = ""


# argv -> output, or None when the command cannot be run here (not installed, timed out).
CommandRunner = Callable[[Sequence[str]], "CommandOutput | None"]


def run_command(argv: Sequence[str]) -> CommandOutput | None:
    """Run `argv` with a deadline; None when it cannot be run."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return CommandOutput(done.returncode, done.stdout, done.stderr)


def read_readiness(
    root: Path, run: CommandRunner, gpu_containers: list[GpuContainer] | None
) -> ReadinessReadings:
    """Everything the readiness rules judge, but the containers (the Docker adapter's)."""
    return ReadinessReadings(
        units=read_unit_states(run, READ_UNITS, root),
        docker_after=read_docker_after(run) if root == Path("/") else None,
        toolkit_mode=read_toolkit_mode(root),
        device_nodes=read_device_nodes(root),
        dev_char_links=read_dev_char_links(root),
        gpu_containers=gpu_containers,
    )


def read_unit_states(
    run: CommandRunner, units: Iterable[str], root: Path = Path("/")
) -> list[UnitState] | None:
    """`systemctl [--root ROOT] is-enabled UNIT` for each unit (it reads unit files: no running
    systemd needed); None when there is no systemctl. A unit systemctl cannot judge reads as
    None (unknown)."""
    where = [] if root == Path("/") else [f"--root={root}"]
    states = []
    for unit in units:
        output = run(["systemctl", *where, "is-enabled", unit])
        if output is None:
            return None
        states.append(UnitState(name=unit, state=_unit_state(output)))
    return states


def _unit_state(output: CommandOutput) -> str | None:
    words = output.stdout.split()
    if words:
        return words[0]
    # systemd before v250 prints nothing on stdout for a unit it cannot find.
    return "not-found" if "No such file or directory" in output.stderr else None


def read_docker_after(run: CommandRunner) -> list[str] | None:
    """The units docker.service starts after (its `After=` and every unit's `Before=docker`),
    as the running systemd computed them; None when systemd cannot be asked."""
    output = run(["systemctl", "show", "--property=After", "docker.service"])
    if output is None or output.returncode != 0:
        return None
    key, _, value = output.stdout.strip().partition("=")
    if key != "After":
        return None
    return sorted(value.split())


def read_toolkit_mode(root: Path) -> str | None:
    """The runtime's mode in config.toml ('auto' when the key is absent); None when the file
    is absent or unreadable."""
    path = root / TOOLKIT_CONFIG
    try:
        if path.stat().st_size > _CONFIG_LIMIT:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return _mode_in(text)


def _mode_in(text: str) -> str | None:
    try:
        table = load_toml(text, TOOLKIT_CONFIG).get("nvidia-container-runtime", {})
    except InputError:
        return None
    mode = table.get("mode", "auto") if isinstance(table, dict) else None
    return mode if isinstance(mode, str) else None


def read_device_nodes(root: Path) -> list[str] | None:
    """The NVIDIA device nodes present under /dev; None when /dev cannot be listed."""
    try:
        names = os.listdir(root / "dev")
    except OSError:
        return None
    return sorted(name for name in names if _NODE.fullmatch(name))


def read_dev_char_links(root: Path) -> list[str] | None:
    """NVIDIA device nodes that a /dev/char/MAJOR:MINOR symlink points to (what
    `nvidia-ctk system create-dev-char-symlinks` makes); None when /dev/char cannot be listed."""
    folder = root / "dev" / "char"
    try:
        entries = list(folder.iterdir())
    except OSError:
        return None
    linked = set()
    for entry in entries:
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        name = Path(target).name
        if _NODE.fullmatch(name):
            linked.add(name)
    return sorted(linked)
