"""A GPU host's root directory as the readiness checks read it (`verify.host-root`): /dev with
the NVIDIA nodes and their /dev/char links, the toolkit's config.toml and systemd units.

The NVML stand-in describes a host's GPUs; this describes the same host's files, so a
`gpuship verify` reading both sees one consistent host. Plain files stand in for the
character devices (the readers list names and read links; they never open a node). Tests
of an unready host pass what differs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

UNIT = (
    "[Unit]\nDescription={name}\n[Service]\nExecStart=/bin/true\n"
    "[Install]\nWantedBy=multi-user.target\n"
)
NVIDIA_MAJOR = 195


def write_host_root(
    root: Path,
    gpu_count: int,
    *,
    mode: str = "cdi",
    dev_char_links: bool = True,
    uvm: bool = True,
    enabled: Sequence[str] = ("docker.service", "nvidia-persistenced.service"),
    disabled: Sequence[str] = (),
) -> Path:
    """Write a host root under `root`: ready by default, each keyword a way to be unready."""
    nodes = ["nvidiactl", *(f"nvidia{i}" for i in range(gpu_count))]
    if uvm:
        nodes += ["nvidia-uvm", "nvidia-uvm-tools"]
    char = root / "dev" / "char"
    char.mkdir(parents=True, exist_ok=True)
    for minor, node in enumerate(nodes):
        (root / "dev" / node).write_text("")
        if dev_char_links:
            os.symlink(f"../{node}", char / f"{NVIDIA_MAJOR}:{minor}")
    config = root / "etc/nvidia-container-runtime/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[nvidia-container-runtime]\nmode = "{mode}"\n')
    units = root / "usr/lib/systemd/system"
    units.mkdir(parents=True, exist_ok=True)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for name in (*enabled, *disabled):
        (units / name).write_text(UNIT.format(name=name))
    for name in enabled:
        os.symlink(f"/usr/lib/systemd/system/{name}", wants / name)
    return root
