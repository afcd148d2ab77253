"""Turn a release outcome into the Report every command returns, and write its files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpuship.release.plan import ReleasePlan
from gpuship.release.policy import TagAction
from gpuship.release.promote import ReleaseOutcome
from gpuship.release.record import render_instructions, rollback_commands
from gpuship.release.referrers import ReferrerCopy
from gpuship.release.rules import (
    IMMUTABLE_CONFLICT,
    REFERRER_TAG_KEPT,
    RELEASE_FAILED,
    RESTORE_INCOMPLETE,
    RULES,
)
from gpuship.report import Finding, Report, Severity, Table


def _short(digest: str | None) -> str:
    return digest[:19] if digest else "-"


def write_atomically(path: Path, data: str) -> None:
    """Write a whole file or nothing (temp file in the same directory, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _add_referrers(report: Report, repository: str, referrers: list[ReferrerCopy]) -> None:
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


def referrers_json(referrers: list[ReferrerCopy]) -> list[dict[str, object]]:
    """The referrers as the JSON result lists them."""
    return [
        {
            "digest": p.referrer.digest,
            "media_type": p.referrer.descriptor.media_type,
            "artifact_type": p.referrer.descriptor.artifact_type,
            "tag": p.referrer.tag,
            "action": p.action,
        }
        for p in referrers
    ]


def release_report(
    command: str,
    outcome: ReleaseOutcome,
    record_file: Path | None,
    instructions_file: Path | None,
) -> Report:
    """The report of a promote or rollback; files are written only when it succeeded."""
    record = outcome.record
    report = Report(command=command, rules=dict(RULES), subject=record.repository)
    for step in outcome.conflicts:
        report.add(
            Finding(
                IMMUTABLE_CONFLICT.id,
                Severity.ERROR,
                f"{record.repository}:{step.tag} is immutable and already points at "
                f"{step.before}; refusing to point it at {step.after}",
            )
        )
    if outcome.error and not outcome.conflicts:
        restored = ", ".join(outcome.restored) or "none"
        report.add(
            Finding(
                RELEASE_FAILED.id,
                Severity.ERROR,
                f"{outcome.error}. Tags written then put back: {restored}.",
            )
        )
    for tag, where in outcome.unrestored.items():
        report.add(
            Finding(
                RESTORE_INCOMPLETE.id,
                Severity.ERROR,
                f"{record.repository}:{tag} could not be put back: {where}",
            )
        )
    _add_referrers(report, record.repository, outcome.referrers)
    rows = []
    for step in outcome.steps:
        state = step.action.value
        if step.tag in outcome.restored:
            state += " (restored)"
        elif step.tag in outcome.unrestored:
            state += " (NOT restored)"
        elif outcome.error and step.writes and step.tag not in outcome.written:
            state += " (not written)"
        rows.append((step.tag, step.kind.value, _short(step.before), _short(step.after), state))
    report.tables.append(Table("Tags", ("tag", "kind", "before", "after", "action"), tuple(rows)))
    moved = [s for s in outcome.steps if s.action is TagAction.MOVE and s.before is not None]
    if outcome.succeeded and moved:
        report.tables.append(
            Table(
                "Rollback",
                ("tag", "gpuship", "crane"),
                tuple(
                    (
                        s.tag,
                        f"gpuship rollback {record.repository}:{s.tag}",
                        rollback_commands(record.repository, s.tag, s.before or "")["crane"],
                    )
                    for s in moved
                ),
            )
        )
    report.failed = not outcome.succeeded
    changed = [s.tag for s in outcome.steps if s.writes]
    report.result = {
        "record": record.model_dump(mode="json", by_alias=True),
        "stored": outcome.record_digest is not None,
        "record_digest": outcome.record_digest,
        "written": outcome.written,
        "restored": outcome.restored,
        "unrestored": outcome.unrestored,
        "error": outcome.error,
    }
    report.result["referrers"] = referrers_json(outcome.referrers)
    if outcome.copy is not None:
        report.result["copy"] = {
            "blobs": outcome.copy.blobs,
            "manifests_written": outcome.copy.manifests_written,
            "bytes_copied": outcome.copy.bytes_copied,
        }
    report.outputs = {
        "digest": record.digest,
        "release-id": record.id if outcome.record_digest else "",
        "tags": ",".join(s.tag for s in outcome.steps),
        "moved-tags": ",".join(s.tag for s in moved) if outcome.succeeded else "",
        "changed-tags": ",".join(changed) if outcome.succeeded else "",
    }
    if outcome.succeeded:
        if record_file is not None:
            write_atomically(record_file, record.model_dump_json(by_alias=True, indent=2) + "\n")
            report.outputs["record-file"] = str(record_file)
        if instructions_file is not None:
            write_atomically(instructions_file, render_instructions(record))
            report.outputs["instructions-file"] = str(instructions_file)
        verb = "rolled back" if record.kind == "rollback" else "promoted"
        report.headline = (
            f"{verb} {_short(record.digest)} to {len(outcome.steps)} tags of "
            f"{record.repository} ({len(changed)} changed)"
            + (f", release {record.id}" if outcome.record_digest else ", nothing to record")
        )
    elif outcome.conflicts:
        report.headline = "refused: immutable tags already point elsewhere; nothing was written"
    else:
        report.headline = f"{record.kind} failed; " + (
            "every written tag was put back" if not outcome.unrestored else "SOME TAGS NOT RESTORED"
        )
    return report


def plan_report(command: str, plan: ReleasePlan) -> Report:
    """The report of a dry run: every tag's old and new digest, every blob and manifest the
    copy would need, the referrers to copy; conflicts fail it as the real run would fail."""
    target = str(plan.request.target)
    report = Report(command=command, rules=dict(RULES), subject=target)
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
    _add_referrers(report, target, plan.referrers)
    report.failed = bool(plan.conflicts)
    record = plan.request.kind
    report.result = {
        "dry_run": True,
        "kind": record,
        "repository": target,
        "source": str(plan.request.source),
        "digest": plan.digest,
        "media_type": plan.media_type,
        "tags": [
            {
                "tag": s.tag,
                "kind": s.kind.value,
                "before": s.before,
                "after": s.after,
                "action": s.action.value,
            }
            for s in plan.steps
        ],
        "content": [
            {"kind": c.kind, "digest": c.digest, "size": c.size, "action": c.action}
            for c in plan.content
        ],
        "referrers": referrers_json(plan.referrers),
        "history_records": plan.history_records,
        "records_added": 1 if plan.writes and not plan.conflicts else 0,
    }
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
