"""Run the copyable workflows of `workflows-examples/` end to end through `act` in host mode.

A test gets `run_example(...)`, which lays out a throwaway *user repository* (the sample
project at its root, the example under `.github/workflows/`, one git commit) and runs act in it:

- `uses: gpuship/gpuship/actions/<stage>@v1` and `uses: gpuship/gpuship@v1` resolve to a
  clean copy of this checkout (`--local-repository gpuship/gpuship@v1=<copy>`), exactly as
  a user's workflow names them;
- the third-party actions the examples pin by SHA (checkout, upload-sarif, upload-artifact,
  download-artifact, create-pull-request) need GitHub, so act maps each `owner/repo@<sha>`
  to a local stand-in in `standins/` that does the local equivalent and records what it
  received (see `standins/standin.py`);
- runner labels are mapped to the host (`-P <label>=-self-hosted`) one by one: a job whose
  labels are not mapped is silently skipped by act, so tests assert on each job's result.

The locked wheels the actions install are pre-seeded in act's tool cache (keyed as
`actions/_setup/setup.sh` keys them), as on a warm self-hosted runner: they are downloaded once
per session (`locked_wheels`, the one step that reaches PyPI, as scripts/test's own install
does); the workflows themselves reach only 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from example_harness import (
    ACT_TIMEOUT_S,
    CHECKOUT_PARTS,
    ROOT,
    SARIF_SCHEMA,
    STANDINS,
    ActCommand,
    ExampleRun,
    RunExample,
    RunWorkflow,
    find_tool,
    parse_act_log,
    user_repository,
    wheel_cache_name,
)

from bed.act import RUNNER_VARIABLE, run_bounded


@pytest.fixture(scope="session")
def gpuship_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean copy of the files a gpuship release holds (no venv, caches or build output)."""
    checkout = tmp_path_factory.mktemp("gpuship-checkout")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for part in CHECKOUT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, checkout / part, ignore=ignore)
        else:
            shutil.copy2(source, checkout / part)
    return checkout


@pytest.fixture(scope="session")
def locked_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """requirements/action.txt's wheels for this interpreter, downloaded once per session with
    the arguments setup.sh uses (hash-checked, wheels only)."""
    wheels = tmp_path_factory.mktemp("locked-wheels")
    lock = ROOT / "requirements" / "action.txt"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"),
            *("--only-binary", ":all:", "--require-hashes", "--no-deps", "-r", str(lock)),
            *("-d", str(wheels)),
        ],
        check=True,
        capture_output=True,
    )
    return wheels


@pytest.fixture(scope="session")
def act_cache(tmp_path_factory: pytest.TempPathFactory, locked_wheels: Path) -> Path:
    """act's action cache (`--action-cache-path`), with gpuship's locked wheels pre-seeded in its
    tool cache (act sets RUNNER_TOOL_CACHE to `<action cache>/tool_cache`), where
    `actions/_setup/setup.sh` finds them (and checks each against the lock) before unpacking.
    """
    cache = tmp_path_factory.mktemp("act-cache")
    shutil.copytree(locked_wheels, cache / "tool_cache" / "gpuship" / wheel_cache_name())
    return cache


@pytest.fixture(scope="session")
def act_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HOME for act and the steps (act keeps its state there; the user's stays untouched)."""
    return tmp_path_factory.mktemp("act-home")


@pytest.fixture
def run_workflow(
    tmp_path: Path, gpuship_checkout: Path, act_cache: Path, act_home: Path
) -> Iterator[RunWorkflow]:
    """Run `.github/workflows/<workflow>` of a prepared git repository through act."""
    act = find_tool("act")

    def run(
        repo: Path,
        workflow: str,
        *,
        event: str,
        payload: Mapping[str, Any] | None = None,
        labels: tuple[str, ...] = ("ubuntu-latest",),
        variables: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        job: str | None = None,
    ) -> ExampleRun:
        # Each run gets its own event file, stand-in records and artifact store.
        run_dir = Path(tempfile.mkdtemp(prefix=f"act-{Path(workflow).stem}-", dir=tmp_path))
        payload_file = run_dir / "event.json"
        payload_file.write_text(json.dumps(payload or {}), encoding="utf-8")
        records = run_dir / "standin-records"
        artifacts = run_dir / "standin-artifacts"
        artifacts.mkdir()
        command = ActCommand(
            event=event,
            workflow=workflow,
            labels=labels,
            checkout=gpuship_checkout,
            action_cache=act_cache,
            payload_file=payload_file,
            variables=variables or {},
            secrets=secrets or {},
            job=job,
        )
        # The outer CI's runner variables and a developer's activated venv must not leak in.
        process_env = {
            name: value
            for name, value in {**os.environ, **(env or {}), **(secrets or {})}.items()
            if not RUNNER_VARIABLE.match(name) and name not in ("VIRTUAL_ENV", "PYTHONPATH")
        }
        process_env.update(
            {
                # python3 on PATH is the test interpreter, whose version keys the seeded wheels.
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
                "HOME": str(act_home),
                "ACT_DISABLE_VERSION_CHECK": "1",
                "GPUSHIP_STANDIN_PYTHON": sys.executable,
                "GPUSHIP_STANDIN_LIB": str(STANDINS),
                "GPUSHIP_STANDIN_RECORDS": str(records),
                "GPUSHIP_STANDIN_ARTIFACTS": str(artifacts),
                "GPUSHIP_STANDIN_CHECKOUT_SOURCE": str(repo),
                "GPUSHIP_SARIF_SCHEMA": str(SARIF_SCHEMA),
            }
        )
        returncode, output = run_bounded(command.argv(act), repo, process_env, ACT_TIMEOUT_S)
        return parse_act_log(returncode, output, repo, records, artifacts)

    yield run


@pytest.fixture
def run_example(tmp_path: Path, run_workflow: RunWorkflow) -> Iterator[RunExample]:
    """Run one example of workflows-examples/ in a fresh user repository (sample project)."""

    def run(
        workflow: str,
        *,
        registry_host: str | None = None,
        files: Mapping[str, str] | None = None,
        prepare: Callable[[Path], None] | None = None,
        **act_options: Any,
    ) -> ExampleRun:
        repo = Path(tempfile.mkdtemp(prefix=f"{Path(workflow).stem}-", dir=tmp_path)) / "repo"
        user_repository(repo, workflow, registry_host, files or {}, prepare)
        return run_workflow(repo, workflow, **act_options)

    yield run
