"""Reports of what was only planned (`--dry-run`) and of the referrers copied with an image."""

from __future__ import annotations

from gpuship.release.plan import ReleasePlan
from gpuship.release.referrers import ReferrerCopy
from gpuship.release.result import DryRunResult, PlannedTag, ReferrerResult
from gpuship.release.rules import IMMUTABLE_CONFLICT, REFERRER_TAG_KEPT, RULES
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id


def _short(digest: str | None) -> str:
    return digest[:19] if digest else "-"


def add_referrers(report: Report, repository: str, referrers: list[ReferrerCopy]) -> None:
    """The referrers copied (or to copy) with the image: a table, JSON, and a warning for each
    cosign tag kept because the target had it on other content."""
    if not referrers:
        return
    for planned in referrers:
        if planned.action == "kept-target-tag":
            report.add(
                Finding(
                    REFERRER_TAG_KEPT.id,
                    Severity.WARNING,
                    f"{repository}:{planned.referrer.tag} already holds other content; kept it, "
                    f"so {planned.referrer.digest} from the candidate was not tagged there",
                )
            )
    report.tables.append(
        Table(
            "Referrers (signatures, attestations, SBOMs)",
            ("referrer", "artifact type", "via", "action"),
            tuple(
                (
                    _short(p.referrer.digest),
                    p.referrer.descriptor.artifact_type or p.referrer.descriptor.media_type,
                    p.referrer.kind,
                    p.action,
                )
                for p in referrers
            ),
        )
    )


def referrer_results(referrers: list[ReferrerCopy]) -> tuple[ReferrerResult, ...]:
    """The referrers as the result lists them."""
    return tuple(
        ReferrerResult(
            digest=p.referrer.digest,
            media_type=p.referrer.descriptor.media_type,
            artifact_type=p.referrer.descriptor.artifact_type,
            tag=p.referrer.tag,
            action=p.action,
        )
        for p in referrers
    )


def plan_report(command: str, plan: ReleasePlan) -> Report:
    """The report of a dry run: every tag's old and new digest, every blob and manifest the
    copy would need, the referrers to copy; conflicts fail it as the real run would fail."""
    target = str(plan.request.target)
    report = Report(command=command, rules=rules_by_id(RULES), subject=target)
    for step in plan.conflicts:
        report.add(
            Finding(
                IMMUTABLE_CONFLICT.id,
                Severity.ERROR,
                f"{target}:{step.tag} is immutable and already points at {step.before}; "
                f"promoting would be refused",
            )
        )
    report.tables.append(
        Table(
            "Tags (dry run)",
            ("tag", "kind", "now", "would be", "action"),
            tuple(
                (s.tag, s.kind.value, _short(s.before), _short(s.after), s.action.value)
                for s in plan.steps
            ),
        )
    )
    if plan.content:
        report.tables.append(
            Table(
                "Content to copy (dry run)",
                ("kind", "digest", "bytes", "action"),
                tuple((c.kind, _short(c.digest), str(c.size), c.action) for c in plan.content),
            )
        )
    add_referrers(report, target, plan.referrers)
    report.failed = bool(plan.conflicts)
    record = plan.request.kind
    report.result = DryRunResult(
        dry_run=True,
        kind=record,
        repository=target,
        source=str(plan.request.source),
        digest=plan.digest,
        media_type=plan.media_type,
        tags=tuple(
            PlannedTag(s.tag, s.kind.value, s.before, s.after, s.action.value) for s in plan.steps
        ),
        content=tuple(plan.content),
        referrers=referrer_results(plan.referrers),
        records_added=1 if plan.writes and not plan.conflicts else 0,
    )
    report.outputs = {
        "digest": plan.digest,
        "tags": ",".join(s.tag for s in plan.steps),
        "changed-tags": ",".join(s.tag for s in plan.writes) if not plan.conflicts else "",
        "dry-run": "true",
    }
    if plan.conflicts:
        report.headline = (
            "dry run: refused, immutable tags already point elsewhere; nothing changed"
        )
    else:
        copied = sum(1 for c in plan.content if c.action in ("mount", "copy", "put"))
        report.headline = (
            f"dry run: would {record} {_short(plan.digest)} to {len(plan.steps)} tags of "
            f"{target} ({len(plan.writes)} changed, {copied} blobs/manifests to copy, "
            f"{len(plan.referrers)} referrers); nothing changed"
        )
    return report
