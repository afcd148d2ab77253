"""actions/_setup on the platforms it claims: Linux x86_64/arm64 and macOS, and a clear
error elsewhere; run directly and under act.

What is simulated: `uname` (a PATH shim naming Darwin/arm64 or Linux/aarch64) and a missing
`sha256sum` (a shim that fails as on macOS, where `shasum` is there instead). What cannot be
here: macOS's bash 3.2 and BSD userland (Debian has no bash 3.2 package; the scripts avoid
bash 4 features and GNU-only flags instead: no `mv -T`, no `sha256sum`-only hashing), and a
real arm64 CPU or a GitHub-hosted runner's actions/cache (its step is skipped under act, whose
runner is not 'github-hosted'; the key and path it would use are checked below).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from example_harness import ROOT, RunWorkflow, commit_repository

pytestmark = pytest.mark.integration
PLAN = ROOT / "actions" / "_setup" / "plan.sh"
SETUP = ROOT / "actions" / "_setup" / "setup.sh"


def shims(directory: Path, system: str, machine: str) -> Path:
    """`uname` answering as another platform, and a `sha256sum` that is not there."""
    directory.mkdir(parents=True, exist_ok=True)
    uname = directory / "uname"
    uname.write_text(
        f'#!/bin/sh\ncase "$1" in -s) echo {system} ;; -m) echo {machine} ;; '
        '*) exec /usr/bin/uname "$@" ;; esac\n'
    )
    missing = directory / "sha256sum"
    missing.write_text('#!/bin/sh\necho "sha256sum: command not found" >&2\nexit 127\n')
    for script in (uname, missing):
        script.chmod(0o755)
    return directory


def run_plan(tmp_path: Path, system: str, machine: str) -> subprocess.CompletedProcess[str]:
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "PATH": f"{shims(tmp_path / 'shims', system, machine)}:{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TOOL_CACHE": str(tmp_path / "tool_cache"),
    }
    return subprocess.run(["bash", str(PLAN)], env=env, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("system", "machine", "name"),
    [
        ("Darwin", "arm64", "macos-arm64"),
        ("Linux", "aarch64", "linux-arm64"),
        ("Darwin", "x86_64", "macos-x86_64"),
        ("Linux", "x86_64", "linux-x86_64"),
    ],
)
def test_plan_names_the_wheel_cache_and_key_per_platform(
    tmp_path: Path, system: str, machine: str, name: str
) -> None:
    done = run_plan(tmp_path, system, machine)
    assert done.returncode == 0, done.stderr + done.stdout
    outputs = dict(
        line.split("=", 1) for line in (tmp_path / "github_output").read_text().splitlines()
    )
    assert Path(outputs["wheels"]).parent == tmp_path / "tool_cache" / "gpuship"
    assert Path(outputs["wheels"]).name.startswith(f"wheels-{name}-py3.")
    assert outputs["key"].startswith(f"gpuship-wheels-{name}-py3.")
    # shasum stood in for the missing sha256sum: the same 16 hex digits as the real one.
    real = subprocess.run(
        ["sha256sum", str(ROOT / "requirements" / "action.txt")], capture_output=True, text=True
    ).stdout[:16]
    assert outputs["key"].endswith(real) and outputs["wheels"].endswith(real)


@pytest.mark.parametrize(
    ("system", "machine"),
    [("MINGW64_NT-10.0-20348", "x86_64"), ("Linux", "s390x"), ("FreeBSD", "amd64")],
)
def test_unsupported_platform_is_one_clear_error(tmp_path: Path, system: str, machine: str) -> None:
    done = run_plan(tmp_path, system, machine)
    assert done.returncode == 3
    assert done.stdout == (
        "::error title=gpuship setup::gpuship actions run on Linux (x86_64, arm64) and macOS "
        f"(arm64, x86_64) runners; this one is {system} {machine}\n"
    )


def test_lint_action_under_act_as_macos_arm64_and_linux_arm64(
    tmp_path: Path, run_workflow: RunWorkflow, act_cache: Path
) -> None:
    # The seeded wheels under the names a macOS/arm64 and a Linux/arm64 runner would use (the
    # x86_64 Linux wheels: the shims change what the scripts see, not what the CPU runs).
    tools = act_cache / "tool_cache" / "gpuship"
    (seeded,) = [p for p in tools.iterdir() if p.name.startswith("wheels-linux-x86_64-")]
    for name in ("macos-arm64", "linux-arm64"):
        alias = tools / seeded.name.replace("linux-x86_64", name)
        if not alias.exists():
            alias.symlink_to(seeded)
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN echo hi\n")
    steps = []
    for job, system, machine in (
        ("macos", "Darwin", "arm64"),
        ("arm64", "Linux", "aarch64"),
        ("windows", "MINGW64_NT-10.0", "x86_64"),
    ):
        steps.append(
            f"""  {job}:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd
      - name: Pretend to be {system} {machine}
        run: echo "{shims(tmp_path / job, system, machine)}" >> "$GITHUB_PATH"
      - id: lint
        uses: gpuship/gpuship/actions/lint@v1
        with:
          paths: Dockerfile
          fail-on: never
"""
        )
    workflow = "on: push\npermissions: {}\njobs:\n" + "".join(steps)
    (repo / ".github" / "workflows" / "platforms.yml").write_text(workflow)
    commit_repository(repo)

    for job in ("macos", "arm64"):
        run = run_workflow(repo, "platforms.yml", event="push", job=job)
        assert run.job_results(job) == ["success"], run.explain()
        assert f"wheels-{'macos-arm64' if job == 'macos' else 'linux-arm64'}-py" in run.log
        # The Dockerfile was linted: its unpinned base is a note (GSL103).
        (outputs,) = run.step_outputs(job, "lint")
        assert outputs["exit-code"] == "0" and int(outputs["note-count"]) >= 1, outputs
    run = run_workflow(repo, "platforms.yml", event="push", job="windows")
    assert run.job_results("windows") == ["failure"], run.explain()
    assert "this one is MINGW64_NT-10.0 x86_64" in run.log
