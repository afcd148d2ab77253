"""scripts/check-collected: the test command's guard against test files pytest never runs.

Run on a small copy of the layout (its own tests/ and scripts/), with the pytest of this
environment, so the check is shown to fail on a folder pytest skips (`build` is in pytest's
default norecursedirs) and to pass once every file is collected.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _layout(tmp_path: Path, *tests: str) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "check-collected", tmp_path / "scripts" / "check-collected")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    for relative in tests:
        path = tmp_path / "tests" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def test_it():\n    assert True\n")
    return tmp_path


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", str(root / "scripts" / "check-collected")],
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_test_folder_pytest_skips_fails_the_check(tmp_path: Path) -> None:
    root = _layout(tmp_path, "unit/test_seen.py", "unit/build/test_hidden.py")
    done = _check(root)
    assert done.returncode == 1, done
    assert "tests/unit/build/test_hidden.py" in done.stderr
    assert "test_seen.py" not in done.stderr


def test_every_file_collected_passes(tmp_path: Path) -> None:
    root = _layout(tmp_path, "unit/test_seen.py", "integration/test_other.py")
    done = _check(root)
    assert done.returncode == 0, done
    assert "collected every test file: 2 files" in done.stdout
