"""Release test fixtures: the gpuship CLI run in-process."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from release_images import CliResult, RunCli

from gpuship.cli.main import main
from json_results import checked


@pytest.fixture
def run_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """Run `gpuship ARGS --format json` in-process (in a temp dir, where default record files
    land); returns exit code, JSON report, stderr."""
    monkeypatch.chdir(tmp_path)

    def run(
        *args: str, environ: dict[str, str] | None = None, config: str | None = None
    ) -> CliResult:
        argv = ["--format", "json"]
        if config is not None:
            config_path = tmp_path / "gpuship.yaml"
            config_path.write_text(config)
            argv += ["--config", str(config_path)]
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main([*argv, *args], environ=environ or {}, stdout=stdout, stderr=stderr)
        text = stdout.getvalue()
        report = checked(text) if text.strip().startswith("{") else {}
        return CliResult(code, report, stderr.getvalue())

    return run
