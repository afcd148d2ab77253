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


PASSING = "def test_it():\n    assert True\n"
# What tests/unit/core/test_extras.py does on Python 3.10 (no tomllib): no test ids at all.
SKIPPED = 'import pytest\n\npytest.importorskip("no_such_module_here")\n\n\n' + PASSING
BROKEN = "import no_such_module_here\n\n\n" + PASSING


def _layout(tmp_path: Path, *tests: str, **sources: str) -> Path:
    """A checkout with passing test files at `tests`, and others whose source is given."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "check-collected", tmp_path / "scripts" / "check-collected")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    files = {**dict.fromkeys(tests, PASSING), **sources}
    for relative, source in files.items():
        path = tmp_path / "tests" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
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


def test_a_file_skipped_whole_counts_as_collected_and_is_listed(tmp_path: Path) -> None:
    skipped = {"unit/test_skipped.py": SKIPPED, "unit/build/test_skipped_too.py": SKIPPED}
    root = _layout(tmp_path, "unit/test_seen.py", "unit/build/test_hidden.py", **skipped)
    done = _check(root)
    assert done.returncode == 1, done
    assert done.stderr.split("\n", 1)[1].split() == [
        "tests/unit/build/test_hidden.py",
        "tests/unit/build/test_skipped_too.py",
    ]
    (root / "tests" / "unit" / "build").rename(root / "tests" / "unit" / "built")
    done = _check(root)
    assert done.returncode == 0, done
    assert "tests/unit/test_skipped.py: Skipped: could not import 'no_such_module_here'" in (
        done.stdout
    )
    assert "collected every test file: 4 files" in done.stdout


def test_a_collection_error_fails_with_pytest_report(tmp_path: Path) -> None:
    root = _layout(tmp_path, "unit/test_seen.py", **{"unit/test_broken.py": BROKEN})
    done = _check(root)
    assert done.returncode == 1, done
    assert "ERROR collecting tests/unit/test_broken.py" in done.stderr
    assert "No module named 'no_such_module_here'" in done.stderr
    assert "pytest --collect-only failed (exit status 2)" in done.stderr


def test_a_usage_error_fails_with_pytest_output(tmp_path: Path) -> None:
    root = _layout(tmp_path, "unit/test_seen.py")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--no-such-flag"\n')
    done = _check(root)
    assert done.returncode == 1, done
    assert "--no-such-flag" in done.stderr
    assert "pytest --collect-only failed (exit status 4)" in done.stderr
