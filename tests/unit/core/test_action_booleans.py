"""Every boolean input of every action (default "true" or "false") is read strictly: a value
other than true/1/false/0/empty stops the step before gpuship runs, with one `::error` line
naming the input and exit 2. A typo read as "false" would turn `dry-run: yes` into a real
promote or rollback, and `deep: yes` into no scan.

Each action's own script runs here under bash with the environment its step sets (every
variable empty but the misspelt one), as the step would run it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
_SCRIPT = re.compile(r'^(?:exec )?bash "\$GITHUB_ACTION_PATH/([^"]+)"$')
_INPUT = re.compile(r"^\$\{\{ inputs\.([a-z0-9-]+) \}\}$")


def _boolean_inputs() -> list[tuple[str, str, str, dict[str, str]]]:
    """(action, input, its variable, the step's environment) for each boolean input."""
    found = []
    for action in sorted((ROOT / "actions").glob("*/action.yml")):
        spec = yaml.safe_load(action.read_text())
        booleans = {
            name
            for name, entry in spec.get("inputs", {}).items()
            if str(entry.get("default")) in ("true", "false")
        }
        for step in spec["runs"]["steps"]:
            script = _SCRIPT.match(str(step.get("run", "")).strip())
            env = {key: str(value) for key, value in (step.get("env") or {}).items()}
            for variable, value in env.items():
                read = _INPUT.match(value)
                if script and read and read.group(1) in booleans:
                    path = str(action.parent / script.group(1))
                    found.append((action.parent.name, read.group(1), variable, env | {"_": path}))
    return found


CASES = _boolean_inputs()


def test_every_boolean_input_is_found() -> None:
    # The actions' boolean inputs as of this test: one missing here went unchecked.
    assert {(action, name) for action, name, _, _ in CASES} >= {
        ("build", "push"),
        ("promote", "dry-run"),
        ("rollback", "dry-run"),
        ("prune", "apply"),
        ("verify", "running"),
    }


@pytest.mark.parametrize(
    ("action", "name", "variable", "env"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_a_misspelt_boolean_stops_the_step_with_one_line(
    tmp_path: Path, action: str, name: str, variable: str, env: dict[str, str]
) -> None:
    outputs = tmp_path / "outputs"
    step = {key: "" for key in env if key != "_"}
    step |= {variable: "yes", "GITHUB_OUTPUT": str(outputs), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["bash", env["_"]], env=step, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2, (action, done.stdout, done.stderr)
    assert done.stdout.strip() == (
        f"::error title=gpuship::input {name}: 'yes' is not 'true' or 'false'"
    ), done.stderr
    assert outputs.read_text() == "exit-code=2\n"
