"""The act harness of the example tests: user repository, act command line, parsed run.

See conftest.py for how the pieces fit; tests import `ExampleRun`, `RunExample` and the
constants from here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bed.act import ACTIONS_CACHE, CACHE_STANDIN

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "workflows-examples"
SAMPLE_PROJECT = EXAMPLES / "sample-project"
STANDINS = Path(__file__).parent / "standins"
SARIF_SCHEMA = ROOT / "tests" / "data" / "schemas" / "sarif-2.1.0-rtm.5.json"
GPUSHIP_REF = "gpuship/gpuship@v1"
USER_REPOSITORY = "acme/models"
USER_REMOTE = f"https://github.com/{USER_REPOSITORY}.git"
# What a release of gpuship contains: the files the actions need at run time.
CHECKOUT_PARTS = ("action.yml", "actions", "src", "requirements", "pyproject.toml")
# Each third-party action the examples pin, as `owner/repo@<sha>` exactly as written in
# `uses:` (act matches the key literally), and the stand-in folder it is mapped to.
THIRD_PARTY_STANDINS: dict[str, str] = {
    "actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd": "checkout",
    "github/codeql-action@1c5b675653bb5c22dbe9b12b556ec555138e09fd": "codeql-action",
    "actions/upload-artifact@043fb46d1a93c77aae656e7c1c64a875d1fc6a0a": "upload-artifact",
    "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c": "download-artifact",
    "peter-evans/create-pull-request@5f6978faf089d4d20b00c7766989d076bb2fc7f1": (
        "create-pull-request"
    ),
}
ACT_TIMEOUT_S = 540


@dataclass(frozen=True)
class ActEvent:
    """One JSON log line of act (`--json`)."""

    data: Mapping[str, Any]

    @property
    def job_id(self) -> str:
        return str(self.data.get("jobID", ""))

    @property
    def step_id(self) -> tuple[str, ...]:
        return tuple(self.data.get("stepID") or ())


@dataclass(frozen=True)
class ExampleRun:
    """What one act run of an example did: exit code, log, stand-in records, artifacts."""

    returncode: int
    events: tuple[ActEvent, ...]
    log: str
    repo: Path
    records_dir: Path
    artifacts_dir: Path

    def job_results(self, job_id: str) -> list[str]:
        """`success`/`failure` per run of the job (one per matrix cell); [] = never ran."""
        return [
            str(e.data["jobResult"])
            for e in self.events
            if e.job_id == job_id and "jobResult" in e.data
        ]

    def step_outputs(self, job_id: str, step_id: str) -> list[dict[str, str]]:
        """Outputs the step set, one dict per run of the job (matrix cells in log order).

        For a composite action these are the outputs its inner steps wrote, which gpuship's
        actions declare under the same names.
        """
        per_run: dict[str, dict[str, str]] = {}
        for event in self.events:
            data = event.data
            if event.job_id != job_id or data.get("command") != "set-output":
                continue
            if event.step_id[:1] != (step_id,):
                continue
            run_key = json.dumps(data.get("matrix") or {}, sort_keys=True)
            per_run.setdefault(run_key, {})[str(data["name"])] = str(data.get("arg", ""))
        return list(per_run.values())

    def annotations(self, job_id: str, level: str) -> list[dict[str, str]]:
        """Workflow-command annotations (`::error file=..,line=..::`) the job wrote: properties."""
        return [
            {**e.data.get("kvPairs", {}), "message": str(e.data.get("arg", ""))}
            for e in self.events
            if e.job_id == job_id and e.data.get("command") == level
        ]

    def records(self, standin: str) -> list[dict[str, Any]]:
        """What the stand-in received, one dict per call (see standins/standin.py)."""
        path = self.records_dir / f"{standin}.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def explain(self) -> str:
        """The tail of the log, for assertion messages."""
        return "\n".join(self.log.splitlines()[-80:])


RunExample = Callable[..., ExampleRun]
RunWorkflow = Callable[..., ExampleRun]


def user_repository(
    repo: Path,
    workflow: str,
    registry_host: str | None,
    files: Mapping[str, str],
    prepare: Callable[[Path], None] | None = None,
) -> None:
    """The sample project at the root, the example workflow, the test's files; one commit.

    `prepare(repo)` runs last before the commit, e.g. `gpuship lock` writing gpuship.lock as
    a user commits it.
    """
    shutil.copytree(SAMPLE_PROJECT, repo)
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy2(EXAMPLES / workflow, workflows / workflow)
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(content, encoding="utf-8")
    if registry_host is not None:
        # The sample project writes `localhost:5000` for "your registry".
        config = repo / "gpuship.yaml"
        config.write_text(
            config.read_text(encoding="utf-8").replace("localhost:5000", registry_host),
            encoding="utf-8",
        )
    if prepare is not None:
        prepare(repo)
    commit_repository(repo)


def commit_repository(repo: Path) -> None:
    """`git init` + one commit on main + an origin remote (act reads github.* from git)."""
    git = ["git", "-c", "user.name=gpuship tests", "-c", "user.email=tests@gpuship.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "test commit"], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", USER_REMOTE], check=True)


@dataclass(frozen=True)
class ActCommand:
    """The act command line for one example run (host mode, offline, stand-ins mapped)."""

    event: str
    workflow: str
    labels: tuple[str, ...]
    checkout: Path
    action_cache: Path
    payload_file: Path
    variables: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    job: str | None = None

    def argv(self, act: str) -> list[str]:
        argv = [
            act,
            self.event,
            "--json",
            "-W",
            f".github/workflows/{self.workflow}",
            "-e",
            str(self.payload_file),
            # Run the checkout stand-in instead of act's built-in copy of the repository.
            "--no-skip-checkout",
            # Offline: no action download, no image pull, no artifact cache server.
            "--action-offline-mode",
            "--pull=false",
            "--no-cache-server",
            "--action-cache-path",
            str(self.action_cache),
            "--local-repository",
            f"{GPUSHIP_REF}={self.checkout}",
        ]
        for key, folder in THIRD_PARTY_STANDINS.items():
            argv += ["--local-repository", f"{key}={STANDINS / folder}"]
        argv += ["--local-repository", f"{ACTIONS_CACHE}={CACHE_STANDIN}"]
        for label in self.labels:
            argv += ["-P", f"{label}=-self-hosted"]
        for name, value in self.variables.items():
            argv += ["--var", f"{name}={value}"]
        for name in self.secrets:
            argv += ["-s", name]  # value from the environment, never on the command line
        if self.job:
            argv += ["-j", self.job]
        return argv


def parse_act_log(
    returncode: int, output: str, repo: Path, records_dir: Path, artifacts_dir: Path
) -> ExampleRun:
    """Turn act's `--json` output (plus its plain-text errors) into an ExampleRun."""
    events: list[ActEvent] = []
    lines: list[str] = []
    for line in output.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            lines.append(line)  # act's own errors are plain text
            continue
        event = ActEvent(data)
        events.append(event)
        lines.append(f"[{data.get('job', '')}] {data.get('msg', '')}".rstrip())
    return ExampleRun(
        returncode=returncode,
        events=tuple(events),
        log="\n".join(lines),
        repo=repo,
        records_dir=records_dir,
        artifacts_dir=artifacts_dir,
    )


def find_tool(name: str) -> str:
    """A tool of the test extra: beside the interpreter first (un-activated venv), then PATH."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which(name, path=path)
    if found is None:
        pytest.skip(f"{name} not installed (pip install -e '.[test]' provides it)")
    return found


def uses_of(workflow: Path) -> list[str]:
    """Every `uses:` value of a workflow file, comments stripped."""
    pattern = re.compile(r"^\s*(?:-\s+)?uses:\s*([^\s#]+)", re.MULTILINE)
    return pattern.findall(workflow.read_text(encoding="utf-8"))


def wheel_cache_name() -> str:
    """The tool-cache folder `actions/_setup/plan.sh` names for this interpreter's wheels."""
    lock_hash = hashlib.sha256((ROOT / "requirements" / "action.txt").read_bytes()).hexdigest()
    system = {"Linux": "linux", "Darwin": "macos"}[os.uname().sysname]
    arch = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[os.uname().machine]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"wheels-{system}-{arch}-py{version}-{lock_hash[:16]}"
