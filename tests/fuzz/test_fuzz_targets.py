"""Each coverage-guided fuzz target runs for a few seconds in the test command.

The committed corpus (`corpus/<target>/`) is replayed first, so every input a longer run once
found stays a regression test; then atheris mutates for `SECONDS`. A crash, an input slower
than `-timeout` or a process past `-rss_limit_mb` fails the test with the input's path. The
hour-long run is `.github/workflows/fuzz.yml`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

HERE = Path(__file__).resolve().parent
SECONDS = int(os.environ.get("GPUSHIP_FUZZ_SECONDS", "5"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_finds_nothing(target: str, tmp_path: Path) -> None:
    new = tmp_path / "new"
    new.mkdir()
    command = [
        sys.executable,
        str(HERE / "run.py"),
        target,
        f"-max_total_time={SECONDS}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={tmp_path}/",
        str(new),
        str(HERE / "corpus" / target),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 300)
    found = sorted(p.name for p in tmp_path.iterdir() if p.name != "new")
    assert result.returncode == 0, f"{target}: {found}\n{result.stderr[-6000:]}"
    assert "Done" in result.stderr  # libFuzzer's closing line: the run really happened
