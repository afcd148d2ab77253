"""A release's copy progress: in CI logs (no terminal) only the total, once the copy ends."""

from __future__ import annotations

import pytest

from gpuship.release.progress import CopyProgress


def test_ci_logs_get_one_total_line(capsys: pytest.CaptureFixture[str]) -> None:
    progress = CopyProgress()
    progress("sha256:" + "a" * 64, 1_000_000)
    progress("sha256:" + "b" * 64, 1_500_000)
    progress("sha256:" + "a" * 64, 500_000)
    assert capsys.readouterr().err == ""
    progress.finish()
    assert capsys.readouterr().err == "copied 2 blobs, 3.0 MB\n"


def test_nothing_copied_logs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    CopyProgress().finish()
    assert capsys.readouterr().err == ""
