"""Release test fixtures: the gpuship CLI run in-process, a Bearer-token registry."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from release_images import CliResult, RunCli
from tokenauth import TOKEN_PASSWORD, TOKEN_USER, TokenRegistry, run_token_registry

from bed.process import require_binary
from gpuship.cli.main import main


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
        report = json.loads(text) if text.strip().startswith("{") else {}
        return CliResult(code, report, stderr.getvalue())

    return run


@pytest.fixture(scope="session")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenRegistry]:
    """docker-registry with `auth: token` (Bearer) and a test token issuer; user/password
    TOKEN_USER/TOKEN_PASSWORD."""
    require_binary("docker-registry")
    require_binary("openssl")
    with run_token_registry(
        tmp_path_factory.mktemp("token-registry"), TOKEN_USER, TOKEN_PASSWORD
    ) as running:
        yield running
