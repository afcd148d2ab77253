"""Turn a release outcome into the Report every command returns, and write its files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuship.errors import InputError
from gpuship.files import write_atomically
from gpuship.release.plan_report import add_referrers, referrer_results
from gpuship.release.policy import TagAction
from gpuship.release.promote import ReleaseOutcome, TagFate, TagResult
from gpuship.release.record import ReleaseRecord, render_instructions, rollback_commands
from gpuship.release.result import CopyResult, ReleasedTag, ReleaseResult
from gpuship.release.rules import (
    CONCURRENT_WRITER,
    IMMUTABLE_CONFLICT,
    RECORD_NOT_FOLLOWED,
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
    """The report of a promote or rollback; files are written only when it succeeded.

    Whatever happened, the table and the result say what each tag holds at the end, as far
    as this run could read it. A file that cannot be written is a warning: the release is in
    the registry either way, and the exit code and step outputs must say so.
    """
    record = outcome.record
    report = Report(command=command, rules=rules_by_id(RULES), subject=record.repository)
    _findings(report, outcome)
    add_referrers(report, record.repository, outcome.referrers)
    report.tables.append(
        Table(
            "Tags",
            ("tag", "kind", "before", "after", "action", "result", "registry holds"),
            tuple(
                (
                    tag,
                    result.step.kind.value,
                    _short(result.step.before),
                    _short(result.step.after),
                    result.step.action.value,
                    result.fate.value,
                    _holds(result),
                )
                for tag, result in outcome.tags.items()
            ),
        )
    )
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
    report.failed_exit_code = outcome.exit_code
    report.changes = True
    report.warnings.extend(outcome.warnings)
    changed = [s.tag for s in outcome.steps if s.writes]
    report.result = _result(outcome)
    report.outputs = {
        "digest": record.digest,
        "release-id": record.id if outcome.record_state == "stored" else "",
        "tags": ",".join(s.tag for s in outcome.steps),
        "moved-tags": ",".join(s.tag for s in moved) if outcome.succeeded else "",
        "changed-tags": ",".join(changed) if outcome.succeeded else "",
    }
    if outcome.succeeded:
        _write_files(report, record, record_file, instructions_file)
    report.headline = _headline(outcome, changed)
    return report


def _findings(report: Report, outcome: ReleaseOutcome) -> None:
    repository = outcome.record.repository
    for step in outcome.conflicts:
        report.add(
            Finding(
                IMMUTABLE_CONFLICT.id,
                Severity.ERROR,
                f"{repository}:{step.tag} is immutable and already points at "
                f"{step.before}; refusing to point it at {step.after}",
            )
        )
    if outcome.error and not outcome.conflicts:
        report.add(
            Finding(
                RELEASE_FAILED.id,
                Severity.ERROR,
                f"{outcome.error}. Registry now: {_summary(outcome)}.",
            )
        )
    for tag, result in outcome.tags.items():
        if result.fate in (TagFate.NOT_RESTORED, TagFate.UNKNOWN):
            report.add(
                Finding(
                    RESTORE_INCOMPLETE.id,
                    Severity.ERROR,
                    f"{repository}:{tag} could not be put back: {_holds(result)}"
                    + (f" ({result.note})" if result.note else ""),
                )
            )
        elif result.fate in (TagFate.SUPERSEDED, TagFate.LEFT):
            report.add(
                Finding(
                    CONCURRENT_WRITER.id,
                    Severity.WARNING,
                    f"{repository}:{tag}: {result.note}; it points at {_holds(result)}",
                )
            )


def _holds(result: TagResult) -> str:
    if not result.known:
        return "unknown"
    return result.now or "nothing (no such tag)"


def _summary(outcome: ReleaseOutcome) -> str:
    record = outcome.record
    parts = [
        f"{tag} {result.fate.value} ({_short(result.now) if result.known else 'unknown'})"
        for tag, result in outcome.tags.items()
    ]
    state = {
        "stored": "release record stored",
        "not stored": "no release record",
        "removed": "release record removed",
        "unknown": "the release record may remain",
        "none": "no release record",
        "intent": (
            f"its intent {record.id} stays (history lists it as unfinished; the same command "
            "run again completes it)"
        ),
    }[outcome.record_state]
    return ", ".join([*parts, state])


def _result(outcome: ReleaseOutcome) -> ReleaseResult:
    copy = outcome.copy
    return ReleaseResult(
        record=outcome.record,
        stored=outcome.record_state == "stored",
        record_state=outcome.record_state,
        record_digest=outcome.record_digest,
        tags=tuple(
            ReleasedTag(
                tag=tag,
                kind=r.step.kind.value,
                before=r.step.before,
                after=r.step.after,
                action=r.step.action.value,
                result=r.fate.value,
                now=r.now if r.known else None,
                known=r.known,
                note=r.note,
            )
            for tag, r in outcome.tags.items()
        ),
        written=tuple(outcome.with_fate(TagFate.WRITTEN, TagFate.SUPERSEDED)),
        restored=tuple(outcome.with_fate(TagFate.RESTORED)),
        unrestored={
            tag: _holds(r) + (f" ({r.note})" if r.note else "")
            for tag, r in outcome.tags.items()
            if r.fate in (TagFate.NOT_RESTORED, TagFate.UNKNOWN)
        },
        error=outcome.error,
        referrers=referrer_results(outcome.referrers),
        copy=CopyResult(dict(copy.blobs), copy.manifests_written, copy.bytes_copied)
        if copy is not None
        else None,
    )


def _write_files(
    report: Report, record: ReleaseRecord, record_file: Path | None, instructions_file: Path | None
) -> None:
    instructions = render_instructions(record)
    report.details = instructions
    files = (
        (record_file, record.model_dump_json(by_alias=True, indent=2) + "\n", "record-file"),
        (instructions_file, instructions, "instructions-file"),
    )
    for path, text, output in files:
        if path is None:
            continue
        try:
            write_atomically(path, text, output.replace("-", " "))
        except InputError as error:
            report.warnings.append(f"{error}; the release itself is done and recorded")
            continue
        report.outputs[output] = str(path)


def _headline(outcome: ReleaseOutcome, changed: list[str]) -> str:
    record = outcome.record
    if outcome.succeeded:
        verb = "rolled back" if record.kind == "rollback" else "promoted"
        stored = outcome.record_state == "stored"
        moved_since = outcome.with_fate(TagFate.SUPERSEDED)
        return (
            f"{verb} {_short(record.digest)} to {len(outcome.steps)} tags of "
            f"{record.repository} ({len(changed)} changed)"
            + (f", release {record.id}" if stored else ", nothing to record")
            + (", completing its interrupted run" if outcome.resumed else "")
            + (f"; closed as abandoned: {', '.join(outcome.closed)}" if outcome.closed else "")
            + (f"; since moved by another writer: {', '.join(moved_since)}" if moved_since else "")
        )
    if outcome.conflicts:
        return "refused: immutable tags already point elsewhere; nothing was written"
    failed = f"{record.kind} " + (
        f"interrupted by {outcome.stopped_by}" if outcome.stopped_by else "failed"
    )
    stuck = outcome.with_fate(TagFate.NOT_RESTORED, TagFate.UNKNOWN)
    if stuck:
        return f"{failed}; SOME TAGS NOT RESTORED: {', '.join(stuck)}" + (
            f"; run it again to complete release {record.id}"
            if outcome.record_state == "intent"
            else ""
        )
    if outcome.with_fate(TagFate.RESTORED):
        return f"{failed}; every tag it wrote was put back or left to a later writer"
    return f"{failed}; no tag was changed by this run"


def record_findings(repository: str, doubts: Sequence[tuple[ReleaseRecord, str]]) -> list[Finding]:
    """One warning per record `history` read and never follows (`release/trust.py`)."""
    return [
        Finding(
            RECORD_NOT_FOLLOWED.id,
            Severity.WARNING,
            f"{repository}: the {_STATE_WORD[record.state]} of release {record.id} is not "
            f"followed: {reason}",
        )
        for record, reason in doubts
    ]


_STATE_WORD = {"intent": "intent", "complete": "record", "abandoned": "closing record"}
