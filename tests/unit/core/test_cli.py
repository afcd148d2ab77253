"""The CLI boundary: exit codes, one-line errors, global flags before or after the command."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gpuship import __version__
from gpuship.cli import main as cli_main
from gpuship.cli import registry
from gpuship.cli.context import Context
from gpuship.errors import DockerUnavailable
from gpuship.report import Finding, Report, Severity
from json_results import check_output


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_main.main(argv, environ=env or {}, stdout=out, stderr=err)
    if cli_main.load_commands is registry.load_commands:  # real commands, not stand-ins
        check_output(argv, out.getvalue())
    return code, out.getvalue(), err.getvalue()


def fake_command(behaviour: str) -> types.SimpleNamespace:
    """A command module whose `run` does one thing the boundary must handle."""

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--severity", default="warning")

    def run_command(args: argparse.Namespace, ctx: Context) -> Report:
        if behaviour == "docker-down":
            raise DockerUnavailable("cannot reach the Docker engine at unix:///nope.sock")
        if behaviour == "bug":
            raise RuntimeError("boom")
        report = Report(command="probe", result={"fail_on": ctx.config.fail_on})
        report.add(Finding("P1", Severity(args.severity), "a finding"))
        return report

    return types.SimpleNamespace(
        NAME="probe", HELP="test probe", add_arguments=add_arguments, run=run_command
    )


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    state = {"behaviour": "ok"}
    monkeypatch.setattr(
        cli_main, "load_commands", lambda names=None: [fake_command(state["behaviour"])]
    )
    return state


def test_help_and_version() -> None:
    code, out, _ = run(["--help"])
    assert code == 0 and "exit codes:" in out and "schema" in out
    code, out, _ = run(["--version"])
    assert code == 0 and out.strip() == f"gpuship {__version__}"


def test_no_command_prints_help_and_exits_2() -> None:
    code, out, _ = run([])
    assert code == 2 and "usage: gpuship" in out


def test_unknown_command_is_one_line_exit_2() -> None:
    code, _, err = run(["frobnicate"])
    assert code == 2
    assert err.count("\n") == 1 and "invalid choice: 'frobnicate'" in err
    assert "Traceback" not in err


def test_unknown_flag_exit_2() -> None:
    code, _, err = run(["schema", "--bogus"])
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_missing_config_exit_2(tmp_path: Path) -> None:
    code, _, err = run(["--config", str(tmp_path / "none.yaml"), "schema"])
    assert code == 2 and "none.yaml not found" in err


def test_schema_json_is_valid_schema() -> None:
    code, out, _ = run(["schema"])
    schema = json.loads(out)
    assert code == 0 and schema["additionalProperties"] is False
    assert "fail-on" in schema["properties"]


def test_fail_on_from_flag_env_and_position(probe: dict[str, str]) -> None:
    assert run(["probe"])[0] == 0  # a warning does not fail at the default level
    assert run(["probe", "--fail-on", "warning"])[0] == 1
    assert run(["--fail-on", "warning", "probe"])[0] == 1
    assert run(["probe"], env={"GPUSHIP_FAIL_ON": "warning"})[0] == 1
    assert run(["probe", "--fail-on", "never", "--severity", "error"])[0] == 0


def test_json_format_after_command(probe: dict[str, str]) -> None:
    code, out, _ = run(["probe", "--format", "json", "--fail-on", "never"])
    document = json.loads(out)
    assert code == 0 and document["command"] == "probe"
    assert document["result"] == {"fail_on": "never"}


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--severity", "error"], 1),
        (["--severity", "error", "--fail-on", "never"], 0),
        (["--severity", "warning"], 0),
        (["--severity", "warning", "--fail-on", "warning"], 1),
    ],
)
def test_json_failed_and_step_output_agree_with_the_exit_code(
    probe: dict[str, str], tmp_path: Path, argv: list[str], code: int
) -> None:
    outputs = tmp_path / "outputs"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs)}
    exit_code, out, _ = run(["probe", *argv, "--format", "json"], env=env)
    assert exit_code == code
    assert json.loads(out)["failed"] is (code == 1)
    assert f"failed={'true' if code else 'false'}" in outputs.read_text()


def test_environment_error_exit_3_and_annotation(probe: dict[str, str]) -> None:
    probe["behaviour"] = "docker-down"
    code, out, err = run(["probe"], env={"GITHUB_ACTIONS": "true"})
    assert code == 3
    assert err == "gpuship: error: cannot reach the Docker engine at unix:///nope.sock\n"
    assert out.startswith("::error title=gpuship::cannot reach the Docker engine")


def test_unexpected_error_exit_4_with_traceback(probe: dict[str, str]) -> None:
    probe["behaviour"] = "bug"
    code, _, err = run(["probe"])
    assert code == 4 and "Traceback" in err and "RuntimeError: boom" in err


def test_module_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpuship", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.strip() == f"gpuship {__version__}"


def test_global_flags_after_nested_subcommand(monkeypatch: pytest.MonkeyPatch) -> None:
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        nested = parser.add_subparsers(dest="what", required=True)
        nested.add_parser("show")

    def run_command(args: argparse.Namespace, ctx: Context) -> Report:
        return Report(command="nest", result={"what": args.what})

    module = types.SimpleNamespace(
        NAME="nest", HELP="nested", add_arguments=add_arguments, run=run_command
    )
    monkeypatch.setattr(cli_main, "load_commands", lambda names=None: [module])
    code, out, _ = run(["nest", "show", "--format", "json"])
    assert code == 0 and json.loads(out)["result"] == {"what": "show"}


def test_credentials_are_masked_under_actions(probe: dict[str, str]) -> None:
    env = {"GITHUB_ACTIONS": "true", "GPUSHIP_REGISTRY_PASSWORD": "s3cr%t,:x"}
    _, out, err = run(["probe", "--format", "json", "--fail-on", "never"], env=env)
    assert err.splitlines()[0] == "::add-mask::s3cr%25t,:x"
    assert json.loads(out)["command"] == "probe"  # stdout stays parseable
    _, _, local = run(["probe", "--format", "json"], env={"GPUSHIP_REGISTRY_PASSWORD": "x"})
    assert "add-mask" not in local
