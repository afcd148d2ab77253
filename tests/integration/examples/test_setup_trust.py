"""actions/_setup/setup.sh trusts nothing in the tool cache (actions/_setup/README.md, threat
model): files planted there by whoever can write it, an interpreter, a `.pth`, a wheel, or
the old layout's venv with its `.complete` marker, never run; a checkout's `argparse.py` or
`venv.py` does not shadow a module the steps import. setup.sh runs as the action's step runs
it (bash, the runner's variables), with the real pip; a download it falls back to comes from
the session's locked wheels through pip's own PIP_NO_INDEX/PIP_FIND_LINKS (hash-checked as
from PyPI), so no test reaches PyPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from example_harness import ROOT, wheel_cache_name

pytestmark = pytest.mark.integration
SETUP = ROOT / "actions" / "_setup" / "setup.sh"


def payload(marker: Path) -> str:
    """Python that leaves `marker` behind if it ever runs."""
    return f"open({str(marker)!r}, 'a').write('ran')\n"


def evil_wheel(path: Path, marker: Path) -> None:
    """A wheel named like a locked one whose .pth and package run the payload on import."""
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("evil.pth", "import os; " + payload(marker))
        wheel.writestr("yaml/__init__.py", payload(marker))


def plant_old_venv(tools: Path, marker: Path) -> None:
    """The layout the action trusted before: a venv with `.complete`, under the old key."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    venv = tools / wheel_cache_name().replace("wheels-", "venv-", 1)
    (venv / "bin").mkdir(parents=True)
    site = venv / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "evil.pth").write_text("import os; " + payload(marker))
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho ran >> {marker}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (venv / ".complete").touch()


def plant_beside_wheels(wheels: Path, marker: Path) -> None:
    """An interpreter, a .pth and a wheel of no locked hash next to the real wheels."""
    (wheels / "python").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    (wheels / "python").chmod(0o755)
    (wheels / "evil.pth").write_text("import os; " + payload(marker))
    evil_wheel(wheels / "evil-1.0-py3-none-any.whl", marker)


def replace_a_wheel(wheels: Path, marker: Path) -> None:
    """A locked wheel's file swapped for one that runs the payload (same name)."""
    (pyyaml,) = wheels.glob("[Pp]y[Yy][Aa][Mm][Ll]-*.whl")
    pyyaml.unlink()
    evil_wheel(pyyaml, marker)


def link_a_wheel_away(wheels: Path, marker: Path) -> None:
    """A wheel that is a symlink (to a file the attacker controls): never followed."""
    (pyyaml,) = wheels.glob("[Pp]y[Yy][Aa][Mm][Ll]-*.whl")
    evil_wheel(wheels.parent / "elsewhere.whl", marker)
    pyyaml.unlink()
    pyyaml.symlink_to(wheels.parent / "elsewhere.whl")


def run_setup(
    tmp_path: Path, locked_wheels: Path, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """setup.sh as a step runs it (in the checkout: cwd); the `gpuship` command it wrote."""
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "RUNNER_TOOL_CACHE": str(tmp_path / "tool_cache"),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_OUTPUT": str(output),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(locked_wheels),
    }
    done = subprocess.run(["bash", str(SETUP)], cwd=cwd, env=env, capture_output=True, text=True)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, Path(outputs.get("gpuship", "/nonexistent"))


def lint_a_dockerfile(gpuship: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    workdir.mkdir(exist_ok=True)
    (workdir / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN echo hi\n")
    return subprocess.run(
        [str(gpuship), "lint", "--format", "json", "Dockerfile"],
        cwd=workdir,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("plant", "warned"),
    [
        (plant_old_venv, False),
        (plant_beside_wheels, True),
        (replace_a_wheel, True),
        (link_a_wheel_away, True),
    ],
)
def test_planted_files_in_the_tool_cache_never_run(
    tmp_path: Path, locked_wheels: Path, plant: Callable[[Path, Path], None], warned: bool
) -> None:
    tools = tmp_path / "tool_cache" / "gpuship"
    wheels = tools / wheel_cache_name()
    shutil.copytree(locked_wheels, wheels)
    marker = tmp_path / "pwned"
    plant(tools if plant is plant_old_venv else wheels, marker)

    done, gpuship = run_setup(tmp_path, locked_wheels)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("do not match action.txt" in done.stdout) == warned, done.stdout
    linted = lint_a_dockerfile(gpuship, tmp_path / "work")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "GSL103" in linted.stdout, linted.stdout
    assert not marker.exists(), "a file planted in the tool cache ran"
    # What was downloaded afresh replaced the cache: the next job finds it clean.
    again, _ = run_setup(tmp_path, locked_wheels)
    assert again.returncode == 0 and "do not match" not in again.stdout, again.stdout
    assert not marker.exists()


# Modules the action's steps import (the setup scripts' and gpuship's), as a pull request may
# add them to the checkout the steps run in.
SHADOWS = ("argparse", "platform", "venv", "ensurepip", "shlex", "zipfile", "hashlib", "sysconfig")


def test_a_checkout_module_does_not_shadow_a_module_the_steps_import(
    tmp_path: Path, locked_wheels: Path
) -> None:
    shutil.copytree(locked_wheels, tmp_path / "tool_cache" / "gpuship" / wheel_cache_name())
    marker, work = tmp_path / "pwned", tmp_path / "work"
    work.mkdir()
    for name in SHADOWS:
        (work / f"{name}.py").write_text(payload(marker))
    done, gpuship = run_setup(tmp_path, locked_wheels, cwd=work)
    assert not marker.exists(), "a checkout module ran during setup"
    assert done.returncode == 0, done.stdout + done.stderr
    linted = lint_a_dockerfile(gpuship, work)
    assert not marker.exists(), "a checkout module ran in gpuship"
    assert linted.returncode == 0, linted.stdout + linted.stderr
    # The root action's run step splits `args` with the venv's python too.
    env = {
        **os.environ,
        "GPUSHIP": str(gpuship),
        "GPUSHIP_VENV_PYTHON": str(gpuship.parent / "venv" / "bin" / "python"),
        "INPUT_COMMAND": "lint",
        "INPUT_ARGS": "--format json Dockerfile",
    }
    env.pop("GITHUB_OUTPUT", None)
    ran = subprocess.run(
        ["bash", str(ROOT / "actions" / "_setup" / "run.sh")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert not marker.exists(), "a checkout module ran in the run step"
    assert ran.returncode == 0 and "GSL103" in ran.stdout, ran.stdout + ran.stderr


def test_the_venv_is_private_to_the_job(tmp_path: Path, locked_wheels: Path) -> None:
    wheels = tmp_path / "tool_cache" / "gpuship" / wheel_cache_name()
    shutil.copytree(locked_wheels, wheels)
    done, gpuship = run_setup(tmp_path, locked_wheels)
    assert done.returncode == 0, done.stdout + done.stderr
    # It lives in RUNNER_TEMP, in a folder only this user may enter; the cache holds wheels.
    private = gpuship.parent
    assert private.parent == tmp_path / "runner-temp"
    assert private.stat().st_mode & 0o077 == 0
    assert sorted(p.suffix for p in wheels.iterdir()) == [".whl"] * len(list(wheels.iterdir()))
