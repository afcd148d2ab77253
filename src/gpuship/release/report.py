"""Turn a release outcome into the Report every command returns, and write its files."""

from __future__ import annotations

from pathlib import Path

from gpuship.files import write_atomically
from gpuship.release.plan_report import add_referrers, referrer_results
from gpuship.release.policy import TagAction
from gpuship.release.promote import ReleaseOutcome
from gpuship.release.record import render_instructions, rollback_commands
from gpuship.release.result import CopyResult, ReleaseResult
from gpuship.release.rules import (
    IMMUTABLE_CONFLICT,
    RELEASE_FAILED,
    RESTORE_INCOMPLETE,
    RULES,
)
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id


def _short(digest: str | None) -> str:
    return digest[:19] if digest else "-"


def release_report(
    command: str,
    outcome: ReleaseOutcome,
    record_file: Path | None,
    instructions_file: Path | None,
) -> Report:
    """The report of a promote or rollback; files are written only when it succeeded."""
    record = outcome.record
    report = Report(command=command, rules=rules_by_id(RULES), subject=record.repository)
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
    add_referrers(report, record.repository, outcome.referrers)
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
    copy = outcome.copy
    report.result = ReleaseResult(
        record=record,
        stored=outcome.record_digest is not None,
        record_digest=outcome.record_digest,
        written=tuple(outcome.written),
        restored=tuple(outcome.restored),
        unrestored=dict(outcome.unrestored),
        error=outcome.error,
        referrers=referrer_results(outcome.referrers),
        copy=CopyResult(dict(copy.blobs), copy.manifests_written, copy.bytes_copied)
        if copy is not None
        else None,
    )
    report.outputs = {
        "digest": record.digest,
        "release-id": record.id if outcome.record_digest else "",
        "tags": ",".join(s.tag for s in outcome.steps),
        "moved-tags": ",".join(s.tag for s in moved) if outcome.succeeded else "",
        "changed-tags": ",".join(changed) if outcome.succeeded else "",
    }
    if outcome.succeeded:
        if record_file is not None:
            record_json = record.model_dump_json(by_alias=True, indent=2) + "\n"
            write_atomically(record_file, record_json, "release record")
            report.outputs["record-file"] = str(record_file)
        instructions = render_instructions(record)
        if instructions_file is not None:
            write_atomically(instructions_file, instructions, "instructions")
            report.outputs["instructions-file"] = str(instructions_file)
        report.details = instructions
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
