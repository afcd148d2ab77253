"""Platforms without BuildKit's parser wheel get a clear exit-3 line, not a traceback."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from gpuship.cli.main import main


def test_missing_parser_is_an_environment_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry makes `import dockerfile` raise ImportError, as on aarch64 Linux.
    monkeypatch.setitem(sys.modules, "dockerfile", None)
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = main(["lint", "Dockerfile"], environ={}, stdout=out, stderr=err)
    assert code == 3
    assert "x86_64 Linux and Windows only" in err.getvalue()
    assert err.getvalue().count("\n") == 1
