"""The machine-readable report: a stable JSON document."""

from __future__ import annotations

import json
from typing import Any

from gpuship import __version__
from gpuship.report.model import Finding, Report


def report_document(report: Report) -> dict[str, Any]:
    """The JSON shape other tools rely on; keys are stable across versions."""
    return {
        "tool": "gpuship",
        "version": __version__,
        "command": report.command,
        "failed": report.failed,
        "headline": report.headline,
        "findings": [_finding(report, finding) for finding in report.findings],
        "summary": report.counts(),
        "result": report.result,
    }


def render_json(report: Report) -> str:
    """The report as indented JSON."""
    return json.dumps(report_document(report), indent=2, sort_keys=False, default=str) + "\n"


def _finding(report: Report, finding: Finding) -> dict[str, Any]:
    loc = finding.location
    return {
        "rule": finding.rule,
        "severity": finding.severity.value,
        "message": finding.message,
        "file": loc.file if loc else None,
        "line": loc.line if loc else None,
        "column": loc.column if loc else None,
        "end_line": loc.end_line if loc else None,
        "help_uri": report.help_uri(finding),
        "fix": finding.fix,
        "fingerprint": finding.stable_fingerprint(),
    }
