"""Runs with nothing to validate use the defaults without building (or importing) pydantic;
any file or `GPUSHIP_*` config variable takes the validated path, before the command runs."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuship.cli import main as cli_main
from gpuship.cli.config_catalog import config_model
from gpuship.cli.context import Context
from gpuship.cli.stages import section_keys
from gpuship.config.locate import DEFAULT_FAIL_ON, SHARED_KEYS, has_config_input
from gpuship.lint.config import LintConfig
from gpuship.lint.settings import LintSettings

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
# GSL103: a base image without a digest; the case below has exactly one.
DOCKERFILE = "FROM python:3.12-slim\nUSER 1000\n"


def test_top_level_keys_are_the_models() -> None:
    aliases = {info.alias or name for name, info in config_model().model_fields.items()}
    assert aliases == SHARED_KEYS | section_keys()


def test_defaults_without_pydantic_are_the_models() -> None:
    assert config_model()().fail_on == DEFAULT_FAIL_ON
    assert LintConfig().settings() == LintSettings()
    # settings() maps every validated field; a field added to one side only would be lost.
    assert set(LintConfig.model_fields) == {f.name for f in dataclasses.fields(LintSettings)}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"GPUSHIP_REGISTRY_USER": "bot", "GPUSHIP_PYTHON": "/x", "HOME": "/root"}, False),
        ({"GPUSHIP_FAIL_ON": "warning"}, True),
        ({"GPUSHIP_LINT__REQUIRE_DIGEST": "true"}, True),
        ({"gpuship_lint__disable": "GSL103"}, False),  # the prefix is case-sensitive, as in load
    ],
)
def test_config_input_from_environment(environ: dict[str, str], expected: bool) -> None:
    assert has_config_input(None, environ, SHARED_KEYS | section_keys()) is expected


def test_a_file_is_config_input(tmp_path: Path) -> None:
    assert has_config_input(tmp_path / "gpuship.yaml", {}, SHARED_KEYS)


def test_context_without_input_builds_no_config() -> None:
    ctx = Context(config_path=None, environ={})
    assert ctx.fail_on == "error"
    # The resolver's cached properties were never filled: nothing was validated.
    assert not {"loaded", "config"} & set(ctx.options.__dict__)
    assert Context(config_path=None, environ={}, flags={"fail-on": "never"}).fail_on == "never"
    assert Context(config_path=None, environ={"GPUSHIP_FAIL_ON": "note"}).fail_on == "note"


def _lint_in_fresh_process(cwd: Path, env: dict[str, str]) -> dict[str, object]:
    """`gpuship --format json lint Dockerfile` in a new interpreter; its report and whether
    pydantic was imported."""
    script = (
        "import io, json, sys\n"
        "from gpuship.cli.main import main\n"
        "out = io.StringIO()\n"
        f"code = main(['--format', 'json', 'lint', 'Dockerfile'], environ={env!r}, stdout=out)\n"
        "print(json.dumps({'code': code, 'report': json.loads(out.getvalue()),"
        " 'pydantic': 'pydantic' in sys.modules}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, check=True
    )
    decoded: dict[str, object] = json.loads(result.stdout)
    return decoded


def _rule_ids(outcome: dict[str, object]) -> list[str]:
    report = outcome["report"]
    assert isinstance(report, dict)
    return [finding["rule"] for finding in report["findings"]]


def test_lint_without_config_never_imports_pydantic(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    outcome = _lint_in_fresh_process(tmp_path, {})
    assert outcome["pydantic"] is False
    assert _rule_ids(outcome) == ["GSL103"]


def test_lint_config_in_file_or_environment_is_validated_and_applied(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    from_env = _lint_in_fresh_process(tmp_path, {"GPUSHIP_LINT__DISABLE": "[GSL103]"})
    assert from_env["pydantic"] is True
    assert _rule_ids(from_env) == []
    (tmp_path / "gpuship.yaml").write_text("lint:\n  severity:\n    GSL103: error\n")
    from_file = _lint_in_fresh_process(tmp_path, {})
    assert from_file["code"] == 1
    assert _rule_ids(from_file) == ["GSL103"]


def test_a_broken_file_stops_a_command_that_reads_no_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gpuship.yaml").write_text("lint:\n  disabel: [GSL103]\n")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = cli_main.main(["kb", "torch", "2.6.0"], environ={}, stdout=out, stderr=err)
    assert code == 2
    assert out.getvalue() == ""
    assert "gpuship.yaml:2:3" in err.getvalue()
    assert "disable" in err.getvalue()  # did you mean
