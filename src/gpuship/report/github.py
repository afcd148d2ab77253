"""GitHub workflow-command annotations, within the limits GitHub shows per step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.gha import workflow_command, workspace_relative
from gpuship.report.model import Finding, Report, Severity

# GitHub shows at most 10 annotations of each level per step (actions/toolkit#734).
ANNOTATIONS_PER_LEVEL = 10
_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


@dataclass(frozen=True)
class Annotations:
    """The annotation lines to print and how many findings did not fit."""

    lines: tuple[str, ...]
    not_shown: int


def render_annotations(
    report: Report, environ: Mapping[str, str], per_level: int = ANNOTATIONS_PER_LEVEL
) -> Annotations:
    """The first `per_level` findings of each severity as annotations; the rest counted."""
    lines = [
        workflow_command("warning", message, {"title": f"gpuship {report.command}"})
        for message in report.warnings
    ]
    shown = {severity: 0 for severity in Severity}
    not_shown = 0
    for finding in sorted(report.findings, key=lambda f: -f.severity.rank):
        if shown[finding.severity] >= per_level:
            not_shown += 1
            continue
        shown[finding.severity] += 1
        lines.append(_annotation(finding, environ))
    return Annotations(tuple(lines), not_shown)


def _annotation(finding: Finding, environ: Mapping[str, str]) -> str:
    properties: dict[str, object] = {"title": f"gpuship {finding.rule}"}
    loc = finding.location
    if loc:
        properties["file"] = workspace_relative(loc.file, environ)
        properties["line"] = loc.line
        properties["col"] = loc.column
        properties["endLine"] = loc.end_line
        properties["endColumn"] = loc.end_column
    message = finding.message + (f"\nfix: {finding.fix}" if finding.fix else "")
    return workflow_command(_COMMAND[finding.severity], message, properties)
