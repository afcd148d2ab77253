"""The docs command's rule catalog (`gpuship docs --check`): ids `GSD` + three digits."""

from __future__ import annotations

from gpuship.report import Rule, Severity

STALE = Rule(
    id="GSD101",
    name="docs-stale",
    category="metadata",
    severity=Severity.ERROR,
    summary="A generated reference page differs from what `gpuship docs` generates.",
    rationale="The action, rule, config and result references are generated from the code; a "
    "page edited by hand or not regenerated after a change tells users something untrue.",
    fix="Run `gpuship docs` and commit the result.",
)

RULES: tuple[Rule, ...] = (STALE,)
