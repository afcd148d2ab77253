"""scripts/install-test-deps (the first step of scripts/test) runs as the user: `sudo` only for
installing missing system packages, never as root, never when nothing is missing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "install-test-deps"


def _run(tmp_path: Path, uid: int, installed: bool) -> list[str]:
    """Run the script with `id`, `sudo`, `apt-get`, `dpkg-query` and `sed` shimmed; the calls."""
    shims, log = tmp_path / "shims", tmp_path / "calls"
    shims.mkdir(parents=True)
    status = "install ok installed" if installed else "unknown ok not-installed"
    tools = {
        "id": f'[ "$1" = -u ] && echo {uid}',
        "sudo": f'echo "sudo $*" >> {log}; "$@"',
        "apt-get": f'echo "apt-get $*" >> {log}',
        "dpkg-query": f"printf '{status}'",
        "sed": f'echo "sed $*" >> {log}',
    }
    for name, body in tools.items():
        (shims / name).write_text(f"#!/bin/sh\n{body}\n")
        (shims / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True)
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(not Path("/etc/os-release").exists(), reason="Debian/Ubuntu script")
def test_sudo_only_to_install_what_is_missing(tmp_path: Path) -> None:
    assert _run(tmp_path / "user-all-there", 1000, installed=True) == []
    calls = _run(tmp_path / "user-missing", 1000, installed=False)
    assert any(c.startswith("sudo apt-get install") for c in calls)
    root = _run(tmp_path / "root-missing", 0, installed=False)
    assert not [c for c in root if c.startswith("sudo")]
    assert any(c.startswith("apt-get install") for c in root)
