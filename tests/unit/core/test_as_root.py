"""scripts/as-root (how scripts/test runs the integration tests): the command as is for root;
for a user, through `sudo` with the user's PATH plus /usr/sbin and the GPUSHIP_* variables,
then the checkout's root-owned files handed back to the user, whether the command passed or not.

`id`, `sudo` and `find` are shims that log their calls (the real sudo path was run by hand as
a user with sudo, see the commit); the command is a shim that logs what it was given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "as-root"
CHECKOUT = SCRIPT.parents[1]


def _shims(tmp_path: Path, uid: int, sudo: bool = True) -> tuple[Path, Path]:
    shims, log = tmp_path / "shims", tmp_path / "calls"
    shims.mkdir()
    tools = {
        "id": f'case "$1" in -u) echo {uid} ;; -g) echo {uid + 1} ;; esac',
        "find": f'echo "find $*" >> {log}',
        "probe-command": (
            f'echo "command $* PATH=$PATH GPUSHIP_X=${{GPUSHIP_X:-}}" >> {log}; exit "$1"'
        ),
    }
    if sudo:
        tools["sudo"] = f'echo "sudo $*" >> {log}; [ "$1" = -H ] && shift; "$@"'
    for name, body in tools.items():
        (shims / name).write_text(f"#!/bin/sh\n{body}\n")
        (shims / name).chmod(0o755)
    for name in ("dirname", "env", "sh"):  # what the script and the shims run besides
        os.symlink(shutil.which(name) or name, shims / name)
    return shims, log


def _run(shims: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    env = {"PATH": str(shims), "GPUSHIP_X": "kept words", "OTHER": "1"}
    done = subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT), "probe-command", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done, shims.parent / "calls"


def test_a_user_runs_it_through_sudo_and_gets_the_files_back(tmp_path: Path) -> None:
    shims, _ = _shims(tmp_path, 1000)
    done, log = _run(shims, "4", "more")
    assert done.returncode == 4, done
    path = f"{shims}:/usr/local/sbin:/usr/sbin:/sbin"
    assert log.read_text().splitlines() == [
        f"sudo -H env PATH={path} GPUSHIP_X=kept words probe-command 4 more",
        f"command 4 more PATH={path} GPUSHIP_X=kept words",
        f"sudo find {CHECKOUT} -xdev -user 0 -exec chown -h 1000:1001 {{}} +",
        f"find {CHECKOUT} -xdev -user 0 -exec chown -h 1000:1001 {{}} +",
    ]


def test_the_files_go_back_when_the_command_passes_too(tmp_path: Path) -> None:
    shims, _ = _shims(tmp_path, 1000)
    done, log = _run(shims, "0")
    assert done.returncode == 0, done
    assert log.read_text().splitlines()[-2].startswith(f"sudo find {CHECKOUT} -xdev -user 0")


def test_root_runs_the_command_as_it_is(tmp_path: Path) -> None:
    shims, _ = _shims(tmp_path, 0)
    done, log = _run(shims, "1")
    assert done.returncode == 1, done
    assert log.read_text().splitlines() == [f"command 1 PATH={shims} GPUSHIP_X=kept words"]


def test_a_user_without_sudo_is_told_what_is_needed(tmp_path: Path) -> None:
    shims, _ = _shims(tmp_path, 1000, sudo=False)
    done, log = _run(shims, "0")
    assert done.returncode == 3, done
    assert "'probe-command' needs root" in done.stderr
    assert not log.exists()
