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
