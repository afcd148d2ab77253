"""The package as PyPI would get it: scripts/check-dist (what release.yml runs before the
upload) builds the sdist and wheel, passes `twine check`, installs the wheel in a clean venv
with its base dependencies from the package index, and runs `gpuship --version`,
`gpuship lint`, and a command whose extra is missing (exit 3). Needs the package index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from example_harness import ROOT

pytestmark = pytest.mark.integration


def test_wheel_builds_installs_clean_and_lints(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "check-dist"), str(tmp_path / "dist")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "PASSED" in done.stdout  # twine check, for the wheel and the sdist
    assert "gpuship 0.1.0" in done.stdout and "check-dist: ok" in done.stdout
    assert sorted(p.suffix for p in (tmp_path / "dist").iterdir()) == [".gz", ".whl"]
