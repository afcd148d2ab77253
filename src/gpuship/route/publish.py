"""`gpuship audit --publish`: keep this runner's entry of the fleet inventory fresh.

`--if-older-than` lets the runner's job-started hook call it before every job: the upload is
skipped while the entry is newer than that and the host still reads as the entry says, in
everything routing judges (driver, its CUDA version, GPUs and MIG layout, container runtime,
CDI specs, labels). A driver update or a regenerated CDI spec is published at the next call,
not when the entry has aged; only the time of the reading and values that change by the
second (free memory) do not count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.compat.config import VerifyConfig
from gpuship.compat.verdict import judged_reading
from gpuship.config.duration import format_duration
from gpuship.reference import parse_repository
from gpuship.registry.access import RegistryAccess
from gpuship.report import Finding, Report, Severity
from gpuship.report.catalog import rules_by_id
from gpuship.route import rules
from gpuship.route.inventory import InventoryEntry, entry_tag, publish_audit, read_entry
from gpuship.route.result import Published, PublishSkipped


@dataclass(frozen=True)
class PublishOutcome:
    """What happened: published (with the audit and, over a fresh entry, what changed) or
    skipped (with the entry kept)."""

    repository: str
    tag: str
    audit: HostAudit | None
    skipped_because: str | None
    previous: InventoryEntry | None
    changed: str | None = None


def publish_or_skip(
    fleet: str,
    runner: RunnerIdentity,
    take_audit: Callable[[], HostAudit],
    *,
    if_older_than: timedelta | None,
    now: datetime,
    access: RegistryAccess,
) -> PublishOutcome:
    """Publish a fresh audit as `runner`'s entry unless the entry is newer than `if_older_than`
    and reads the same as the host does now."""
    repo = parse_repository(fleet)
    tag = entry_tag(runner)
    with access.client() as client:
        previous = read_entry(client, repo, tag)
        audit = take_audit()
        changed = None
        if previous is not None and if_older_than is not None:
            age = now - previous.taken_at
            changed = what_changed(previous.audit, audit)
            if age < if_older_than and changed is None:
                reason = (
                    f"entry is {format_duration(max(age, timedelta(0)))} old, newer than "
                    f"{format_duration(if_older_than)}, and the host reads as it says"
                )
                return PublishOutcome(str(repo), tag, None, reason, previous)
        publish_audit(client, repo, audit, previous)
    return PublishOutcome(str(repo), tag, audit, None, previous, changed)


def what_changed(published: HostAudit, fresh: HostAudit) -> str | None:
    """What routing would judge differently on `fresh` than on `published` (None: nothing):
    the driver, the CDI specs, the labels, else the other readings the verdict reads."""
    before, after = published.nvml, fresh.nvml
    if before.driver_version != after.driver_version:
        return f"driver {before.driver_version} -> {after.driver_version}"
    specs = [spec.model_dump() for spec in published.container.cdi_specs]
    if specs != [spec.model_dump() for spec in fresh.container.cdi_specs]:
        return "CDI specs changed"
    if published.runner.labels != fresh.runner.labels:
        labels = ", ".join(fresh.runner.labels) or "none"
        return f"labels {', '.join(published.runner.labels) or 'none'} -> {labels}"
    # Readings as the verdict reads them, free memory left out (it changes by the second).
    config = VerifyConfig()
    if judged_reading(published, config) != judged_reading(fresh, config):
        return "GPU, runtime or system readings changed"
    return None


def label_findings(runner: RunnerIdentity) -> list[Finding]:
    """A warning when the runner publishes without labels: it is then in no pool."""
    if runner.labels:
        return []
    return [
        Finding(
            rule=rules.UNLABELLED_RUNNER,
            severity=Severity.WARNING,
            message=f"runner {runner.runner_name or runner.hostname} publishes its audit without "
            "labels: it is in no pool, so gpuship route never sends a job to it",
            fix="add --label <pool label> (GPUSHIP_RUNNER_LABELS for the runner hook and timer)",
        )
    ]


def publish_report(
    command: str,
    outcome: PublishOutcome,
    runner: RunnerIdentity,
    audit_report: Callable[[HostAudit], Report],
) -> Report:
    """The report of `audit --publish`: the published audit's own report (`audit_report`, the
    verify stage's) with where it went and what it replaced, or why nothing was published;
    with a warning for a runner that has no labels, either way."""
    where = f"{outcome.repository}:{outcome.tag}"
    findings = label_findings(runner)
    if outcome.audit is None:
        return Report(
            command=command,
            findings=findings,
            rules=rules_by_id(rules.RULES),
            result=PublishSkipped(False, where, outcome.skipped_because or ""),
            outputs={"published": "false", "entry": where},
            headline=f"not published: {where} {outcome.skipped_because}",
        )
    report = audit_report(outcome.audit)
    report.findings += findings
    report.rules = {**report.rules, **rules_by_id(rules.RULES)}
    report.result = Published(True, where, outcome.audit)
    report.outputs.update({"published": "true", "entry": where})
    replaced = (
        f", replacing the audit taken {outcome.previous.audit.taken_at}" if outcome.previous else ""
    )
    changed = f" ({outcome.changed})" if outcome.changed else ""
    report.headline += f"; published to {where}{replaced}{changed}"
    return report
