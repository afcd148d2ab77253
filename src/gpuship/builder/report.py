"""Turn what one cell's build did into the Report.

The Report's outputs are the action's: `digest`, `image` (repo@digest), `tags` (one per
line), `imageid` (engine builds) and `metadata` (compact JSON). A failed build becomes a
finding on the Dockerfile line the builder stopped at; a refused push a finding naming what
was and was not pushed. Either way `failed` is set and no digest output is written.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpuship.builder import result as R
from gpuship.builder import rules
from gpuship.builder.build_log import BuildFailure
from gpuship.builder.plan import BuildPlan
from gpuship.image_result import ImageResult
from gpuship.report import Finding, Location, Report, Rule, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.report.result import to_json

# The image stage's checks on a pushed image: findings, their rules, and the image result.
ImageCheckResult = tuple[list[Finding], Mapping[str, Rule], ImageResult]

_OUTPUT_IN_MESSAGE = 10


@dataclass(frozen=True)
class Head:
    """What every build result starts with."""

    cell: str
    builder: str
    secrets: tuple[str, ...] | None


@dataclass(frozen=True)
class BuildOutcome:
    """What a builder did: the digest pushed (None: not pushed), what it refused, the steps."""

    digest: str | None
    image_id: str | None
    pushed: tuple[str, ...]
    refused: tuple[str, str] | None
    not_pushed: tuple[str, ...]
    cached_steps: tuple[str, ...]
    steps: tuple[str, ...]


def _report() -> Report:
    return Report(command="build", rules=rules_by_id(rules.RULES))


def _relative(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def failure_report(head: Head, failure: BuildFailure, dockerfile: Path) -> Report:
    """The builder stopped: a finding on the Dockerfile line, with its last lines of output."""
    report = _report()
    step = f" (step: {failure.step})" if failure.step else ""
    # The builder's own last lines (e.g. pip's error) go with the annotation.
    output = "".join(f"\n{line}" for line in failure.output[-_OUTPUT_IN_MESSAGE:])
    report.add(
        Finding(
            rule=rules.BUILD_FAILED.id,
            severity=Severity.ERROR,
            message=f"{failure.message}{step}{output}",
            location=Location(file=_relative(dockerfile), line=failure.line),
        )
    )
    report.failed = True
    report.result = R.NotBuilt(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        error=failure.message,
        output_tail=tuple(failure.output),
    )
    report.headline = "build failed"
    return report


def refusal_report(head: Head, outcome: BuildOutcome) -> Report:
    """A registry refused a tag: what was and was not pushed."""
    assert outcome.refused is not None
    report = _report()
    tag, message = outcome.refused
    pushed = ", ".join(outcome.pushed) or "none"
    missing = ", ".join(outcome.not_pushed) or tag
    report.add(
        Finding(
            rule=rules.PUSH_REFUSED.id,
            severity=Severity.ERROR,
            message=f"registry refused {tag}: {message}; pushed: {pushed}; not pushed: {missing}",
        )
    )
    report.failed = True
    report.result = R.PushRefused(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        pushed=outcome.pushed,
        not_pushed=outcome.not_pushed,
    )
    report.headline = "push refused; the tag set is incomplete"
    return report


def success_report(
    plan: BuildPlan, head: Head, outcome: BuildOutcome, checked: ImageCheckResult | None
) -> Report:
    """Built (and pushed): the tags, digest, labels and the action's outputs, with the image
    stage's checks of the pushed image when they ran."""
    report = _report()
    tags = plan.tags()
    image = f"{plan.cell.repository}@{outcome.digest}" if outcome.digest else None
    built = R.Built(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        digest=outcome.digest,
        image=image,
        image_id=outcome.image_id,
        tags=tags,
        pushed=plan.push,
        labels=plan.labels(),
        build_args=dict(plan.cell.build_args),
        steps=len(outcome.steps),
        cached_steps=len(outcome.cached_steps),
    )
    # The action's `metadata` output: the result without the image checks and secret ids.
    metadata = {k: v for k, v in to_json(built).items() if k != "secrets"}
    if checked is not None:
        # Merge the image stage's checks of the pushed image into the build report.
        findings, catalog, image_result = checked
        report.findings.extend(findings)
        report.rules = {**report.rules, **catalog}
        built = dataclasses.replace(built, image_checks=image_result)
    report.result = built
    report.outputs.update(
        {
            "digest": outcome.digest or "",
            "image": image or "",
            "imageid": outcome.image_id or "",
            "tags": "\n".join(tags),
            "metadata": json.dumps(metadata, separators=(",", ":"), sort_keys=True),
        }
    )
    report.tables.append(
        Table(
            title=f"Build {plan.cell.id}",
            headers=("tag", "digest"),
            rows=tuple((tag, outcome.digest or "(not pushed)") for tag in tags),
        )
    )
    cached = (
        f", {len(outcome.cached_steps)}/{len(outcome.steps)} steps cached" if outcome.steps else ""
    )
    report.headline = f"built {image or outcome.image_id}{cached}"
    return report
