"""What the examples and action references promise about a release that is done: its files
missing is a warning, not a red job (gpuship itself warns and keeps the exit code), and a
cancelled job's exit codes (130, 143) are documented for every action.

Before the fix, release.yml and rollback.yml uploaded the record with `if-no-files-found:
error`, so a record that a full disk kept from being written turned a shipped release's job
red, and every `exit-code` output listed only 0-3."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "workflows-examples").glob("*.yml"))
ACTIONS = [ROOT / "action.yml", *sorted((ROOT / "actions").glob("*/action.yml"))]
# The actions whose work stands once the registry changed, whatever happens to their files.
REGISTRY_CHANGING = ("promote", "rollback", "prune")


def _steps(workflow: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [job.get("steps", []) for job in workflow.get("jobs", {}).values()]


def _uploads_of_release_files(path: Path) -> list[tuple[str, str]]:
    """(step name, if-no-files-found) of each upload of files a registry-changing step named."""
    found = []
    for steps in _steps(yaml.safe_load(path.read_text())):
        changing = {
            step["id"]
            for step in steps
            if "id" in step
            and re.search(rf"/actions/({'|'.join(REGISTRY_CHANGING)})@", step.get("uses", ""))
        }
        for step in steps:
            if "upload-artifact" not in step.get("uses", ""):
                continue
            named = re.findall(
                r"steps\.([\w-]+)\.outputs", str(step.get("with", {}).get("path", ""))
            )
            if set(named) & changing:
                found.append((step.get("name", "?"), step["with"].get("if-no-files-found", "warn")))
    return found


def test_the_release_examples_upload_their_records():
    # Guards the check below against finding nothing to check.
    names = {path.name for path in EXAMPLES if _uploads_of_release_files(path)}
    assert {"release.yml", "rollback.yml"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_a_missing_release_file_does_not_fail_the_job(path: Path):
    for name, behaviour in _uploads_of_release_files(path):
        assert behaviour in ("warn", "ignore"), f"{path.name}: {name!r}"


@pytest.mark.parametrize("path", ACTIONS, ids=lambda path: path.parent.name)
def test_every_exit_code_output_names_the_interrupted_codes(path: Path):
    outputs = yaml.safe_load(path.read_text())["outputs"]
    description = outputs["exit-code"]["description"]
    assert "130" in description and "143" in description, description
