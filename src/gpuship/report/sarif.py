"""SARIF 2.1.0 as GitHub code scanning accepts it (rules with help, regions, fingerprints).

File paths are relative to the repository root, whatever directory gpuship ran in (an action's
`working-directory`): GitHub matches `artifactLocation.uri` against paths in the checkout. The
root is `GITHUB_WORKSPACE` (the checkout on a runner), else the enclosing git work tree, else
the working directory; `originalUriBaseIds` says where `%SRCROOT%` is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuship import __version__
from gpuship.redaction import redact_data
from gpuship.report.model import DOCS_BASE, Finding, Report, Rule, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
# GitHub rejects a run with more than 25,000 results; keep the most severe.
MAX_RESULTS = 25_000
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def source_root(environ: Mapping[str, str], cwd: Path) -> Path:
    """Where SARIF paths start: GITHUB_WORKSPACE, else the git work tree around `cwd`, else
    `cwd` itself."""
    workspace = environ.get("GITHUB_WORKSPACE")
    if workspace:
        return Path(workspace).resolve()
    here = cwd.resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():  # a directory, or a file in worktrees and submodules
            return directory
    return here


def sarif_document(
    report: Report, root: Path | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """The report as a SARIF log with one run; relative file paths are taken from `cwd` and
    written relative to `root` (both default to the working directory)."""
    cwd = (cwd or Path.cwd()).resolve()
    root = (root or cwd).resolve()
    findings = sorted(report.findings, key=lambda f: -f.severity.rank)[:MAX_RESULTS]
    rule_ids = sorted({f.rule for f in findings} | set(report.rules))
    rules = [_rule(report.rules.get(rule_id), rule_id) for rule_id in rule_ids]
    index = {rule_id: position for position, rule_id in enumerate(rule_ids)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpuship",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": DOCS_BASE,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(report, f, index[f.rule], root, cwd) for f in findings],
            }
        ],
    }


def render_sarif(report: Report, environ: Mapping[str, str], cwd: Path | None = None) -> str:
    """The SARIF log as JSON text, paths relative to the repository root (`source_root`)."""
    cwd = cwd or Path.cwd()
    document = sarif_document(report, source_root(environ, cwd), cwd)
    # Redacted before it is serialised, as `render_json` does.
    return json.dumps(redact_data(document), indent=2) + "\n"


def _rule(rule: Rule | None, rule_id: str) -> dict[str, Any]:
    if rule is None:
        # A finding from outside the catalog (e.g. a build error) still needs a rule entry.
        return {
            "id": rule_id,
            "shortDescription": {"text": rule_id},
            "fullDescription": {"text": rule_id},
            "help": {"text": rule_id},
        }
    limits = f"Not judged: {rule.limits}" if rule.limits else ""
    help_text = "\n\n".join(part for part in (rule.rationale, f"Fix: {rule.fix}", limits) if part)
    help_markdown = help_text
    if rule.bad_example:
        help_markdown += f"\n\nBad:\n\n```\n{rule.bad_example}\n```"
    if rule.good_example:
        help_markdown += f"\n\nGood:\n\n```\n{rule.good_example}\n```"
    tags = [rule.category]
    properties: dict[str, Any] = {"tags": tags, "precision": "high"}
    if rule.security_severity is not None:
        if "security" not in tags:
            tags.append("security")
        properties["security-severity"] = f"{rule.security_severity:.1f}"
    else:
        properties["problem.severity"] = {
            Severity.ERROR: "error",
            Severity.WARNING: "warning",
            Severity.NOTE: "recommendation",
        }[rule.severity]
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary[:1024]},
        "fullDescription": {"text": (rule.rationale or rule.summary)[:1024]},
        "help": {"text": help_text or rule.summary, "markdown": help_markdown or rule.summary},
        "helpUri": rule.help_uri,
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": properties,
    }


def _result(
    report: Report, finding: Finding, rule_index: int, root: Path, cwd: Path
) -> dict[str, Any]:
    loc = finding.location
    region: dict[str, int] = {"startLine": 1, "startColumn": 1}
    uri = report.subject or report.command
    if loc:
        uri = _relative_uri(loc.file, root, cwd)
        if loc.line:
            region = {"startLine": loc.line, "startColumn": loc.column or 1}
            if loc.end_line:
                region["endLine"] = loc.end_line
            if loc.end_column:
                region["endColumn"] = loc.end_column
    message = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
    return {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": _LEVEL[finding.severity],
        "message": {"text": message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": SRCROOT},
                    "region": region,
                }
            }
        ],
        "partialFingerprints": {"gpushipFingerprint/v1": finding.stable_fingerprint()},
    }


def _relative_uri(file: str, root: Path, cwd: Path) -> str:
    """`file` (absolute, or relative to `cwd`) relative to `root`; a file outside the root keeps
    its absolute `file:` URI."""
    path = Path(file)
    absolute = Path(os.path.normpath(path if path.is_absolute() else cwd / path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        pass
    try:  # through symlinks (a checkout under /tmp on macOS, a linked workspace)
        return absolute.resolve().relative_to(root).as_posix()
    except ValueError:
        return absolute.as_uri()
