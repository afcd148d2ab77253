"""actions/lint/lint.sh as the composite action runs it: globs in, outputs and SARIF out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "corpus"


def run_action(workdir: Path, **inputs: str) -> tuple[int, dict[str, str], str]:
    env = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(workdir / "outputs.txt"),
        "GITHUB_STEP_SUMMARY": str(workdir / "summary.md"),
        "GPUSHIP": str(Path(sys.executable).parent / "gpuship"),
        "INPUT_PATHS": "**/Dockerfile* **/*.Dockerfile",
        "INPUT_CONFIG": "",
        "INPUT_FAIL_ON": "",
        "INPUT_SARIF_FILE": "lint.sarif",
        "INPUT_BUILD_ARGS": "",
        "INPUT_TARGET": "",
    }
    workspace = inputs.pop("github_workspace", None)
    if workspace:
        env["GITHUB_WORKSPACE"] = workspace
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    proc = subprocess.run(
        ["bash", str(ROOT / "actions" / "lint" / "lint.sh")],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    outputs = {}
    path = workdir / "outputs.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line and "<<" not in line:
                key, value = line.split("=", 1)
                outputs[key] = value
    return proc.returncode, outputs, proc.stdout


def test_globs_outputs_annotations_and_sarif(tmp_path: Path) -> None:
    shutil.copytree(CORPUS / "secrets-in-args", tmp_path / "a")
    shutil.copytree(CORPUS / "torch-unpublished-variant", tmp_path / "b")
    (tmp_path / "b" / "Dockerfile.dockerignore").write_text("")
    code, outputs, stdout = run_action(tmp_path)
    assert code == 1  # GSL901 and GSL501 are errors
    assert outputs["error-count"] == "4"
    assert outputs["sarif-file"] == "lint.sarif"
    assert "file=a/Dockerfile,line=2,col=5,endLine=2,endColumn=13::ARG HF_TOKEN" in stdout
    sarif = json.loads((tmp_path / "lint.sarif").read_text())
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"GSL901", "GSL501"}


def test_fail_on_never_and_no_match(tmp_path: Path) -> None:
    shutil.copytree(CORPUS / "secrets-in-args", tmp_path / "a")
    code, outputs, _ = run_action(tmp_path, fail_on="never", build_args="X=1")
    assert code == 0 and outputs["exit-code"] == "0"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, outputs, stdout = run_action(empty)
    assert code == 0 and outputs["error-count"] == "0" and "no Dockerfile matched" in stdout


def test_sarif_from_a_working_directory_points_at_the_checkout_path(tmp_path: Path) -> None:
    # The checkout is GITHUB_WORKSPACE; the step runs in its docker/ folder, as with
    # `working-directory: docker`. Code scanning matches SARIF paths against the checkout.
    checkout = tmp_path / "checkout"
    shutil.copytree(CORPUS / "secrets-in-args", checkout / "docker")
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    workdir = checkout / "docker"
    code, _, stdout = run_action(workdir, paths="Dockerfile", github_workspace=str(checkout))
    assert code == 1
    assert "file=docker/Dockerfile,line=2" in stdout
    run = json.loads((workdir / "lint.sarif").read_text())["runs"][0]
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    }
    assert uris == {"docker/Dockerfile"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == checkout.resolve().as_uri() + "/"
    # Without GITHUB_WORKSPACE (a local run) the git work tree is the root.
    (workdir / "lint.sarif").unlink()
    run_action(workdir, paths="Dockerfile", github_workspace="")
    run = json.loads((workdir / "lint.sarif").read_text())["runs"][0]
    assert {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    } == {"docker/Dockerfile"}


def test_the_action_finds_what_the_cli_finds(tmp_path: Path) -> None:
    # The action used to expand its globs in bash with a skip list of its own, which did not
    # skip .venv; now gpuship expands them, with the skip list of `gpuship lint .`.
    shutil.copytree(CORPUS / "secrets-in-args", tmp_path / ".venv" / "lib" / "pkg")
    shutil.copytree(CORPUS / "secrets-in-args", tmp_path / "app")
    code, outputs, _ = run_action(tmp_path)
    sarif = json.loads((tmp_path / "lint.sarif").read_text())
    linted = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    }
    assert linted == {"app/Dockerfile"}
    assert code == 1 and outputs["failed"] == "true"  # outputs written by gpuship itself
    cli = subprocess.run(
        [sys.executable, "-m", "gpuship", "lint", "--format", "json", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert [f["file"] for f in json.loads(cli.stdout)["result"]["files"]] == ["app/Dockerfile"]
