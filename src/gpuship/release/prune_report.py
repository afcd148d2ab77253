"""`gpuship prune`'s report: what retention kept and why, what was (or would be) deleted, and
what a failed or interrupted delete left behind (exit 3 when the registry stopped answering)."""

from __future__ import annotations

import json

from gpuship.errors import EXIT_ENVIRONMENT
from gpuship.reference import Repository
from gpuship.release.prune import PrunePlan
from gpuship.release.result import PruneResult
from gpuship.release.rules import PRUNE_DELETE, PRUNE_FAILED, PRUNE_RESTORED, RULES
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id


def prune_report(command: str, repo: Repository, plan: PrunePlan, *, applied: bool) -> Report:
    """The report of a prune plan; `applied`: its deletes were attempted (`--apply`)."""
    report = Report(command=command, rules=rules_by_id(RULES), subject=str(repo))
    _delete_findings(report, plan, applied)
    report.tables.append(
        Table(
            "Tags",
            ("tag", "digest", "decision", "why"),
            tuple(
                (d.tag, d.digest[:19], "keep" if d.keep else "delete", d.reason) for d in plan.tags
            ),
        )
    )
    report.tables.append(
        Table(
            "Digests",
            ("digest", "tags", "decision", "why"),
            tuple(
                (
                    d.digest[:19],
                    ", ".join(d.tags),
                    _state(d.digest, d.delete, plan, applied),
                    plan.skipped.get(d.digest) or plan.restored.get(d.digest) or d.reason,
                )
                for d in plan.digests
            ),
        )
    )
    selected = [d.digest for d in plan.to_delete]
    report.result = PruneResult(
        repository=str(repo),
        dry_run=not applied,
        selected=tuple(selected),
        deleted=tuple(plan.deleted),
        skipped=dict(plan.skipped),
        failed=dict(plan.failed),
        unknown=dict(plan.unknown),
        restored=dict(plan.restored),
        rollback_targets=dict(plan.targets),
        tags=tuple(plan.tags),
    )
    report.outputs = {
        "selected": ",".join(selected),
        "deleted": ",".join(plan.deleted),
        "dry-run": "false" if applied else "true",
        "rollback-targets": json.dumps(dict(sorted(plan.targets.items())), separators=(",", ":")),
    }
    if plan.interrupted:
        left = [d for d in selected if d not in plan.deleted]
        why = plan.interrupted
        if not plan.signal_exit:
            why = f"the registry stopped answering ({why})"
        report.add(
            Finding(
                PRUNE_FAILED.id,
                Severity.ERROR,
                f"{why}; {len(plan.deleted)} digests deleted, {len(left)} selected digests not "
                "(or not known to be) deleted; run it again to finish",
            )
        )
        report.failed_exit_code = plan.signal_exit or EXIT_ENVIRONMENT
    report.failed = bool(plan.failed or plan.unknown or plan.interrupted)
    report.changes = applied
    kept = sum(d.keep for d in plan.tags)
    targets = f", {len(plan.targets)} rollback targets kept" if plan.targets else ""
    report.headline = f"{kept} of {len(plan.tags)} tags kept{targets}; " + (
        f"{len(plan.deleted)} of {len(selected)} selected digests deleted"
        if applied
        else f"{len(selected)} digests would be deleted (dry run; --apply deletes)"
    )
    return report


def _delete_findings(report: Report, plan: PrunePlan, applied: bool) -> None:
    verb = "deleted" if applied else "would delete"
    for target in plan.to_delete:
        digest = target.digest
        if digest in plan.failed:
            message = f"deleting {digest} failed (it is still there): {plan.failed[digest]}"
            report.add(Finding(PRUNE_FAILED.id, Severity.ERROR, message))
        elif digest in plan.unknown:
            message = (
                f"deleting {digest}: whether it is gone is unknown, the registry stopped "
                f"answering ({plan.unknown[digest]})"
            )
            report.add(Finding(PRUNE_FAILED.id, Severity.ERROR, message))
        elif digest in plan.restored:
            message = f"{digest} (tags: {', '.join(target.tags)}): {plan.restored[digest]}"
            report.add(Finding(PRUNE_RESTORED.id, Severity.NOTE, message))
        elif digest not in plan.skipped:
            message = f"{verb} {digest} (tags: {', '.join(target.tags)})"
            report.add(Finding(PRUNE_DELETE.id, Severity.NOTE, message))


def _state(digest: str, delete: bool, plan: PrunePlan, applied: bool) -> str:
    if not delete:
        return "keep"
    if not applied:
        return "would delete"
    if digest in plan.deleted:
        return "deleted"
    if digest in plan.skipped:
        return "skipped"
    if digest in plan.restored:
        return "put back"
    if digest in plan.unknown:
        return "UNKNOWN"
    return "FAILED" if digest in plan.failed else "keep"
