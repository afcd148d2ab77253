"""Run one composite action's `run` step as a GitHub runner does, so a test can signal it.

A cancelled job is signalled through the step's own process only (the bash the runner starts
for `shell: bash`), never its children: starting the step the same way is the only faithful
test that the signal reaches gpuship.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def start_action_step(
    action: str, workdir: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[str], Path]:
    """Start `actions/<action>`'s step `id: run` in `workdir` with `env` (its INPUT_*s and
    whatever else it needs) plus what the runner sets; return the process (in its own
    process group, so a test can kill what is left) and its GITHUB_OUTPUT file."""
    action_dir = REPOSITORY_ROOT / "actions" / action
    steps = yaml.safe_load((action_dir / "action.yml").read_text())["runs"]["steps"]
    (step,) = [s for s in steps if s.get("id") == "run"]
    script = workdir / "step.sh"
    script.write_text(step["run"] + "\n")
    outputs = workdir / "github_output"
    outputs.touch()
    runner = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(action_dir),
        "GITHUB_OUTPUT": str(outputs),
        "GPUSHIP": str(Path(sys.executable).parent / "gpuship"),
    }
    process = subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=workdir,
        env={**env, **runner},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return process, outputs
