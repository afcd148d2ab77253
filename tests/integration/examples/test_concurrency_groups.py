"""Every example job that writes to an image's repository (promote, rollback, prune with
apply) takes the same concurrency group, keyed by that repository, so retention never runs
beside a release of the same image (docs/operations/registry-access.md, one writer per
repository). Before, release.yml and rollback.yml used `release-<image>` for the whole
workflow and retention.yml `retention-apply`: a nightly prune ran beside releases.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "workflows-examples").glob("*.yml"))
WRITERS = re.compile(r"^gpuship/gpuship/actions/(promote|rollback|prune)@")
# The input of each action that names the repository it writes to.
TARGET_INPUT = {"promote": "source", "rollback": "tag", "prune": "repository"}
GROUP = re.compile(r"^gpuship-registry-(\$\{\{ [a-z.]+ \}\})$")


def _writing_jobs() -> list[tuple[str, str, dict[str, Any], str]]:
    """(workflow, job id, job, the expression naming the repository it writes to)."""
    found = []
    for path in EXAMPLES:
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        for job_id, job in workflow["jobs"].items():
            for step in job.get("steps", []):
                match = WRITERS.match(step.get("uses", ""))
                if match is None:
                    continue
                inputs = step.get("with", {})
                if match.group(1) == "prune" and inputs.get("apply") != "true":
                    continue  # a dry run writes nothing
                found.append((path.name, job_id, job, inputs[TARGET_INPUT[match.group(1)]]))
    return found


def test_every_job_writing_to_a_repository_takes_its_one_group():
    jobs = _writing_jobs()
    assert {(name, job_id) for name, job_id, _, _ in jobs} == {
        ("release.yml", "promote"),
        ("rollback.yml", "rollback"),
        ("retention.yml", "apply"),
    }
    for name, job_id, job, target in jobs:
        concurrency = job.get("concurrency")
        assert isinstance(concurrency, dict), f"{name} {job_id}: no concurrency group"
        match = GROUP.match(concurrency["group"])
        assert match, f"{name} {job_id}: group {concurrency['group']!r}"
        # Keyed by the very expression the step writes to (REGISTRY/REPO, before any :tag or
        # @digest), so release, rollback and retention of one image meet in one group.
        assert target.startswith(match.group(1)), (name, job_id, target)
        rest = target.removeprefix(match.group(1))
        assert rest == "" or rest[0] in ":@", (name, job_id, target)
        # Waiting, never cancelling: a cancelled release or prune stops part-way.
        assert concurrency["cancel-in-progress"] is False, (name, job_id)


def test_no_workflow_level_group_can_deadlock_with_a_job_level_one():
    """A workflow-level group equal to one of its jobs' groups deadlocks (GitHub cancels the
    job); the writing jobs' groups are the only `gpuship-registry-` groups."""
    for path in EXAMPLES:
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        group = (workflow.get("concurrency") or {}).get("group", "")
        assert not str(group).startswith("gpuship-registry-"), path.name
