"""Every action step that runs gpuship `exec`s its script.

GitHub signals a cancelled step's own process only (the bash running its `run:`), never its
children, then SIGKILLs what is left. A step that runs its script without `exec` keeps that
script, and gpuship under it, from ever seeing SIGINT/SIGTERM: a cancelled probe leaves its
container running, a cancelled release cannot put back what it moved. The script passes the
signals on to gpuship (run_gpuship in actions/_setup/common.sh).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ACTIONS = sorted([ROOT / "action.yml", *(ROOT / "actions").glob("*/action.yml")])
# `run: [exec ]bash "$GITHUB_ACTION_PATH/<script>"`, the one form the actions use.
_SCRIPT = re.compile(r'^(exec )?bash "\$GITHUB_ACTION_PATH/([^"]+)"$')


def _runs_gpuship(script: Path) -> bool:
    """The script calls run_gpuship, which starts gpuship and passes signals on to it."""
    return re.search(r"^\s*run_gpuship\b", script.read_text(), re.MULTILINE) is not None


def _gpuship_steps(action: Path) -> list[tuple[str, str]]:
    """(step id, run) of each step whose script runs gpuship."""
    steps = yaml.safe_load(action.read_text())["runs"]["steps"]
    found = []
    for step in steps:
        match = _SCRIPT.match(step.get("run", "").strip())
        if match and _runs_gpuship(action.parent / match.group(2)):
            found.append((step.get("id", ""), step["run"].strip()))
    return found


# Actions that run no gpuship: `comment` posts reports with the standard library alone. Its
# one step execs its script, so a cancelled job signals the script itself.
NO_GPUSHIP = {"comment": 'exec "$GPUSHIP_PYTHON" "$GITHUB_ACTION_PATH/comment.py"'}


@pytest.mark.parametrize("action", ACTIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_step_running_gpuship_execs_its_script(action: Path) -> None:
    if action.parent.name in NO_GPUSHIP:
        (step,) = yaml.safe_load(action.read_text())["runs"]["steps"]
        assert (step["id"], step["run"].strip()) == ("run", NO_GPUSHIP[action.parent.name])
        return
    steps = _gpuship_steps(action)
    # Each action runs gpuship in exactly one step, its `run` step; none is missed by the form.
    assert [step_id for step_id, _ in steps] == ["run"], steps
    ((_, run),) = steps
    assert run.startswith("exec bash "), f"{action}: {run}"


def test_every_action_is_checked() -> None:
    names = {p.parent.name for p in ACTIONS if p.parent != ROOT}
    assert {"probe", "verify", "build", "promote", "prune", "rollback", "route"} <= names
