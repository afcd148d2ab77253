"""Taking labels off runners that lag their pool's driver floor or whose labels lie: the labels
`route` lists in its `label-removals` output, removed (`--remove-labels apply`) or only said
(`dry-run`, the default once asked for) through the remover the command passes in."""

from __future__ import annotations

import json
from collections.abc import Callable

from gpuship.report import Finding, Severity

# (runner, label) -> what happened; the command binds it to GitHub's API and a token.
Remover = Callable[[str, str], str]


def remove_labels(removals_json: str, remover: Remover | None) -> list[Finding]:
    """One note per label: removed (with `remover`) or what a run with `apply` would remove."""
    findings = []
    for entry in json.loads(removals_json or "[]"):
        runner, label = entry["runner"], entry["label"]
        if remover is None:
            message = f"dry run: would take label {label} off runner {runner}"
        else:
            message = remover(runner, label)
        findings.append(Finding(rule=entry["rule"], severity=Severity.NOTE, message=message))
    return findings
