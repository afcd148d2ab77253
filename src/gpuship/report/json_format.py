"""The machine-readable report: a stable JSON document, the same envelope for every command.

`Document` is the envelope; its `result` is the command's typed result. The published
schema (`gpuship schema --result COMMAND`) is made from these same types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from gpuship import __version__
from gpuship.redaction import redact_data
from gpuship.report.model import Finding, Report, Severity
from gpuship.report.result import Counts, to_json

ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class JsonFinding:
    """One finding: where, what, and a stable fingerprint for deduplication across runs."""

    rule: str
    severity: Severity
    message: str
    file: str | None
    line: int | None
    column: int | None
    end_line: int | None
    help_uri: str | None
    fix: str | None
    fingerprint: str


@dataclass(frozen=True)
class Document(Generic[ResultT]):
    """`gpuship COMMAND --format json`: keys are stable across versions."""

    tool: Literal["gpuship"]
    version: str
    command: str
    # The same as the exit code: true exactly when the command exits 1.
    failed: bool
    headline: str
    findings: tuple[JsonFinding, ...]
    summary: Counts
    result: ResultT


def report_document(report: Report) -> dict[str, Any]:
    """The JSON shape other tools rely on, as plain JSON values."""
    counts = report.counts()
    document = Document(
        tool="gpuship",
        version=__version__,
        command=report.command,
        failed=report.failed,
        headline=report.headline,
        findings=tuple(_finding(report, finding) for finding in report.findings),
        summary=Counts(counts["error"], counts["warning"], counts["note"]),
        result=report.result,
    )
    value: dict[str, Any] = to_json(document)
    return value


def render_json(report: Report) -> str:
    """The report as indented JSON."""
    # Redacted before it is serialised: ensure_ascii escapes a password's "ä" as `\u00e4`,
    # which the pattern run over the rendered text would not see as a password.
    document = redact_data(report_document(report))
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def _finding(report: Report, finding: Finding) -> JsonFinding:
    loc = finding.location
    return JsonFinding(
        rule=finding.rule,
        severity=finding.severity,
        message=finding.message,
        file=loc.file if loc else None,
        line=loc.line if loc else None,
        column=loc.column if loc else None,
        end_line=loc.end_line if loc else None,
        help_uri=report.help_uri(finding),
        fix=finding.fix,
        fingerprint=finding.stable_fingerprint(),
    )
