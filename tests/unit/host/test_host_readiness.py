"""The readiness readers on fixture hosts: a root directory laid out like a GPU host, the real
`systemctl --root` over its unit files, and an injected command runner where only a running
systemd could answer (`systemctl show`), which this machine does not have."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuship.host import readiness
from gpuship.host.readiness import CommandOutput

UNIT = (
    "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
)


def host_root(tmp_path: Path, *, nodes: Sequence[str], links: Sequence[str], mode: str) -> Path:
    """A host with these /dev nodes (plain files stand in for the character devices), these
    /dev/char links, a toolkit config.toml and docker plus nvidia-persistenced units."""
    root = tmp_path / "host"
    (root / "dev" / "char").mkdir(parents=True)
    for number, node in enumerate(nodes):
        (root / "dev" / node).write_text("")
        if node in links:
            os.symlink(f"../{node}", root / "dev" / "char" / f"195:{number}")
    os.symlink("../null", root / "dev" / "char" / "1:3")
    config = root / readiness.TOOLKIT_CONFIG
    config.parent.mkdir(parents=True)
    config.write_text(f'[nvidia-container-runtime]\nmode = "{mode}"\nlog-level = "info"\n')
    units = root / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    for name in ("docker.service", "nvidia-persistenced.service"):
        (units / name).write_text(UNIT)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    os.symlink("/usr/lib/systemd/system/docker.service", wants / "docker.service")
    return root


def test_device_nodes_links_and_mode_are_read_from_the_root(tmp_path: Path) -> None:
    root = host_root(
        tmp_path, nodes=["nvidiactl", "nvidia0", "nvidia-uvm"], links=["nvidia0"], mode="legacy"
    )
    (root / "dev" / "nvidia-caps").mkdir()  # not a node the rules count
    assert readiness.read_device_nodes(root) == ["nvidia-uvm", "nvidia0", "nvidiactl"]
    assert readiness.read_dev_char_links(root) == ["nvidia0"]
    assert readiness.read_toolkit_mode(root) == "legacy"


def test_what_cannot_be_read_is_none(tmp_path: Path) -> None:
    assert readiness.read_device_nodes(tmp_path / "nothing") is None
    assert readiness.read_dev_char_links(tmp_path) is None
    assert readiness.read_toolkit_mode(tmp_path) is None
    config = tmp_path / readiness.TOOLKIT_CONFIG
    config.parent.mkdir(parents=True)
    config.write_text("[nvidia-container-runtime\nmode=")
    assert readiness.read_toolkit_mode(tmp_path) is None
    config.write_text("[nvidia-container-cli]\nldconfig = '@/sbin/ldconfig'\n")
    assert readiness.read_toolkit_mode(tmp_path) == "auto"  # the toolkit's default


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="needs systemctl")
def test_unit_states_come_from_real_systemctl_over_the_root(tmp_path: Path) -> None:
    root = host_root(tmp_path, nodes=[], links=[], mode="cdi")
    states = readiness.read_unit_states(
        readiness.run_command,
        ["docker.service", "nvidia-persistenced.service", "nvidia-cdi-refresh.service"],
        root,
    )
    assert states is not None
    assert [(s.name, s.state) for s in states] == [
        ("docker.service", "enabled"),
        ("nvidia-persistenced.service", "disabled"),
        ("nvidia-cdi-refresh.service", "not-found"),
    ]


def test_no_systemctl_is_unknown_and_show_is_parsed() -> None:
    def absent(argv: Sequence[str]) -> CommandOutput | None:
        return None

    def booted(argv: Sequence[str]) -> CommandOutput | None:
        assert list(argv) == ["systemctl", "show", "--property=After", "docker.service"]
        return CommandOutput(0, "After=nvidia-cdi-refresh.service network-online.target\n")

    def not_booted(argv: Sequence[str]) -> CommandOutput | None:
        return CommandOutput(1, "", "System has not been booted with systemd as init system")

    assert readiness.read_unit_states(absent, ["docker.service"]) is None
    assert readiness.read_docker_after(booted) == [
        "network-online.target",
        "nvidia-cdi-refresh.service",
    ]
    assert readiness.read_docker_after(not_booted) is None


def test_a_root_other_than_slash_never_asks_the_running_systemd(tmp_path: Path) -> None:
    asked: list[list[str]] = []

    def record(argv: Sequence[str]) -> CommandOutput | None:
        asked.append(list(argv))
        return CommandOutput(0, "enabled\n")

    reading = readiness.read_readiness(tmp_path, record, None)
    assert reading.docker_after is None
    assert all(argv[1] == f"--root={tmp_path}" for argv in asked)
    assert len(asked) == len(readiness.READ_UNITS)
