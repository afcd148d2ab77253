"""`gpuship lint` and `gpuship rules` through the CLI entry point."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from gpuship.cli.main import main
from json_results import check_output

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "schemas"


def run_cli(*argv: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), environ={}, stdout=out, stderr=err)
    check_output(argv, out.getvalue())
    return code, out.getvalue(), err.getvalue()


def test_discovers_dockerfiles_and_writes_sarif(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(CORPUS / "cuda-args-disagree", tmp_path / "svc")
    (tmp_path / "svc" / "Dockerfile.dockerignore").write_text("")
    (tmp_path / "gpu.Dockerfile").write_text("FROM python:3.12@sha256:" + "c" * 64 + "\nUSER 1\n")
    code, out, _ = run_cli(
        "lint", "--format", "json", "--sarif", "out.sarif", cwd=tmp_path, monkeypatch=monkeypatch
    )
    document = json.loads(out)
    files = {f["file"] for f in document["result"]["files"]}
    assert files == {"gpu.Dockerfile", "svc/Dockerfile"}
    assert code == 0  # warnings only; default fail-on is error
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    schema = json.loads((SCHEMAS / "sarif-2.1.0-rtm.5.json").read_text())
    jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {"GSL502", "GSL505"} <= rule_ids
    regions = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startColumn"])
        for r in run["results"]
    }
    assert ("GSL502", 32) in regions  # the torch token, not column 1


def test_fail_on_and_build_arg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Dockerfile").write_text(
        "ARG BASE=python:latest\nFROM ${BASE}\nRUN pip install --no-cache-dir numpy>=1\n"
    )
    code, out, _ = run_cli("lint", "Dockerfile", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 1 and "GSL109" in out and "GSL101" in out
    code, out, _ = run_cli(
        "lint",
        "--build-arg",
        "BASE=python:3.12",
        "--fail-on",
        "never",
        cwd=tmp_path,
        monkeypatch=monkeypatch,
    )
    assert code == 0 and "GSL101" not in out


def test_missing_path_and_unknown_target_are_input_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_cli("lint", "nope/Dockerfile", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2 and "nope/Dockerfile" in err and "Traceback" not in err
    (tmp_path / "Dockerfile").write_text("FROM python:3.12 AS app\n")
    code, _, err = run_cli("lint", "--target", "gpu", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2 and "target stage 'gpu' not found (stages: app)" in err


def test_rules_json_lists_catalog_with_categories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_cli("rules", "--format", "json", cwd=tmp_path, monkeypatch=monkeypatch)
    result = json.loads(out)["result"]
    assert code == 0
    assert "weights" in result["categories"]
    by_id = {r["id"]: r for r in result["rules"]}
    assert by_id["GSL304"]["hadolint"] == ["DL3009"]
    assert by_id["GSL201"]["category"] == "weights"


def test_rules_lists_every_stage_and_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gpuship.yaml").write_text("lint:\n  disable: [GSL201]\n")
    code, out, _ = run_cli("rules", "--format", "json", cwd=tmp_path, monkeypatch=monkeypatch)
    rules = {r["id"]: r for r in json.loads(out)["result"]["rules"]}
    assert code == 0
    stages = {"lint", "image", "build", "verify", "route", "probe", "release", "kb", "docs"}
    assert {r["stage"] for r in rules.values()} == stages
    assert rules["GSK101"]["name"] == "cuda-require-unsatisfied"
    assert rules["GSL201"]["severity"] == "off" and rules["GSL201"]["default_severity"] != "off"
    assert rules["GSV203"]["severity"] == rules["GSV203"]["default_severity"]
    code, out, _ = run_cli(
        "rules", "--stage", "verify", "--format", "json", cwd=tmp_path, monkeypatch=monkeypatch
    )
    assert {r["stage"] for r in json.loads(out)["result"]["rules"]} == {"verify"}


def test_globs_are_expanded_with_the_directory_search_skip_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = "FROM python:3.12@sha256:" + "c" * 64 + "\nUSER 1\n"
    for name in (
        "Dockerfile",
        "svc/api/Dockerfile.gpu",
        "svc/gpu.Dockerfile",
        ".devcontainer/Dockerfile",  # hidden directories count, as bash's dotglob has them
        ".venv/lib/Dockerfile",  # skipped, as `gpuship lint .` skips it
        "node_modules/x/Dockerfile",
        "svc/Dockerfile.dockerignore",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(clean)
    argv = ("lint", "--format", "json", "**/Dockerfile*", "**/*.Dockerfile", "Dockerfile")
    code, out, _ = run_cli(*argv, cwd=tmp_path, monkeypatch=monkeypatch)
    files = [f["file"] for f in json.loads(out)["result"]["files"]]
    assert code == 0
    assert files == [
        ".devcontainer/Dockerfile",
        "Dockerfile",
        "svc/api/Dockerfile.gpu",
        "svc/gpu.Dockerfile",
    ]  # each once, although `Dockerfile` is named twice
    _, out, _ = run_cli("lint", "--format", "json", ".", cwd=tmp_path, monkeypatch=monkeypatch)
    assert sorted(f["file"] for f in json.loads(out)["result"]["files"]) == files
    _, out, _ = run_cli("lint", "--format", "json", "svc/*", cwd=tmp_path, monkeypatch=monkeypatch)
    assert [f["file"] for f in json.loads(out)["result"]["files"]] == ["svc/gpu.Dockerfile"]


def test_globs_that_match_nothing_warn_and_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_cli("lint", "**/Dockerfile*", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 0 and "warning: no Dockerfile matched: **/Dockerfile*" in out, err
    code, _, err = run_cli("lint", "Dockerfile.missing", cwd=tmp_path, monkeypatch=monkeypatch)
    assert code == 2 and "Dockerfile.missing: no such file or directory" in err  # a typo
