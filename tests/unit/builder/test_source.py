"""The commit a candidate tag names and the time a build is stamped with."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpuship.builder.source import build_time, source_commit


def test_the_commit_is_the_flag_else_github_sha_else_the_checkout_head(tmp_path: Path) -> None:
    assert source_commit("abc", {"GITHUB_SHA": "def"}, tmp_path) == "abc"
    assert source_commit(None, {"GITHUB_SHA": "def"}, tmp_path) == "def"
    assert source_commit(None, {}, tmp_path) is None  # not a git checkout
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    assert source_commit(None, {}, tmp_path) == head.stdout.strip()


def test_source_date_epoch_sets_the_build_time() -> None:
    assert build_time({"SOURCE_DATE_EPOCH": "1700000000"}) == "2023-11-14T22:13:20Z"
    now = build_time({"SOURCE_DATE_EPOCH": "soon"})  # not a number: the clock
    assert now.endswith("Z") and len(now) == len("2023-11-14T22:13:20Z")
