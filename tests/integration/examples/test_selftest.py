""".github/workflows/selftest.yml runs green here, and its golden inputs are current.

The selftest calls each action as `uses: ./actions/<name>` in a checkout of gpuship. Here it
runs through `act` in host mode in a copy of this checkout (the files a release holds, the
sample project, the golden inputs and the workflow). On GitHub its `release` and `build` jobs
get a `registry:2` service on localhost:5000; act starts no services in host mode, so those
two jobs run here against the test bed's registry (and Docker engine), with `localhost:5000`
rewritten to it. actions/checkout is the local stand-in (see conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from example_harness import (
    CHECKOUT_PARTS,
    EXAMPLES,
    ROOT,
    ExampleRun,
    RunWorkflow,
    commit_repository,
)

from bed.act import RUNNER_VARIABLE
from bed.docker_engine import DockerEngine
from bed.registry import Registry

pytestmark = pytest.mark.integration

SELFTEST = ROOT / ".github" / "workflows" / "selftest.yml"
GOLDEN = Path(__file__).parent / "golden"
GOLDEN_IN_REPO = "tests/integration/examples/golden"
PLACEHOLDER_REGISTRY = "localhost:5000"


def gpuship_repository(repo: Path, registry_host: str | None = None) -> Path:
    """A copy of gpuship as selftest.yml sees it, committed; the registry optionally rewritten."""
    repo.mkdir(parents=True)
    for part in CHECKOUT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / part)
    shutil.copytree(EXAMPLES / "sample-project", repo / "workflows-examples" / "sample-project")
    shutil.copytree(GOLDEN, repo / GOLDEN_IN_REPO, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".github" / "workflows").mkdir(parents=True)
    workflow = SELFTEST.read_text(encoding="utf-8")
    config = repo / "workflows-examples" / "sample-project" / "gpuship.yaml"
    if registry_host is not None:
        workflow = workflow.replace(PLACEHOLDER_REGISTRY, registry_host)
        config.write_text(config.read_text().replace(PLACEHOLDER_REGISTRY, registry_host))
    (repo / ".github" / "workflows" / "selftest.yml").write_text(workflow, encoding="utf-8")
    commit_repository(repo)
    return repo


def assert_passed_with_its_failure_modes(run: ExampleRun, job: str) -> None:
    """The job succeeded although its failure-mode steps (continue-on-error) failed."""
    assert run.returncode == 0, run.explain()
    assert run.job_results(job) == ["success"], run.explain()
    failed = {e.step_id[0] for e in run.events if e.data.get("stepResult") == "failure"}
    assert failed, "no failure-mode step failed"


def test_golden_matrix_matches_the_matrix_command() -> None:
    """expected.json is what `gpuship matrix` prints today; selftest compares the action to it.

    Outside a workflow run: under GitHub Actions the cells also carry the run's commit and
    repository labels, which selftest.yml strips before comparing.
    """
    environment = {k: v for k, v in os.environ.items() if not RUNNER_VARIABLE.match(k)}
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "matrix", "--format", "json"],
        cwd=GOLDEN / "matrix",
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads((GOLDEN / "matrix" / "expected.json").read_text(encoding="utf-8"))
    assert json.loads(done.stdout)["result"] == expected
    assert {cell["image"] for cell in expected["include"]} == {"train", "serve"}


@pytest.mark.parametrize("job", ["root", "matrix", "lint", "gpu-host"])
def test_selftest_job_passes_under_act(job: str, tmp_path: Path, run_workflow: RunWorkflow) -> None:
    repo = gpuship_repository(tmp_path / "gpuship")

    run = run_workflow(repo, "selftest.yml", event="push", job=job)

    assert_passed_with_its_failure_modes(run, job)


@pytest.mark.parametrize("job", ["release", "build"])
def test_selftest_registry_job_passes_against_the_bed_registry(
    job: str,
    tmp_path: Path,
    run_workflow: RunWorkflow,
    registry: Registry,
    docker_engine: DockerEngine,
) -> None:
    repo = gpuship_repository(tmp_path / "gpuship", registry_host=registry.host)

    run = run_workflow(repo, "selftest.yml", event="push", job=job, env=docker_engine.env)

    assert_passed_with_its_failure_modes(run, job)
