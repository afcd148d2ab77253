"""Every command's rules in one list: for `gpuship rules`, the generated rule pages and the
severity overrides of gpuship.yaml (`rules_overrides`).

Each stage keeps its catalog next to its checks, in the same shape: `RULES: tuple[Rule, ...]`
in its `rules.py`. This module only gathers them, so a rule id (GSL lint, GSI image, GSB
build, GSV verify, GSQ route, GSP probe, GSR release, GSK kb, GSD docs) is documented
wherever it is used. A new stage adds its `rules` module to the imports and a `Stage` to
`STAGES`. It sits in the CLI layer because it imports every stage; the docs stage gets
`STAGES` from its command, as plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.builder import rules as builder_rules
from gpuship.docs import rules as docs_rules
from gpuship.image import rules as image_rules
from gpuship.kb import rules as kb_rules
from gpuship.lint import rules as lint_rules
from gpuship.lint.settings import LintSettings
from gpuship.matrix import rules as matrix_rules
from gpuship.probe import rules as probe_rules
from gpuship.release import rules as release_rules
from gpuship.report import CATEGORIES, Report, Severity, Table
from gpuship.report.catalog import (
    CatalogEntry,
    Overrides,
    OverrideSource,
    Stage,
    catalog_entries,
    resolve_overrides,
)
from gpuship.route import rules as route_rules
from gpuship.verify import rules as verify_rules

STAGES = (
    Stage("lint", "Dockerfile lint (`gpuship lint`)", lint_rules.RULES),
    Stage("image", "Image inspection (`gpuship inspect`, `lint --image`)", image_rules.RULES),
    Stage(
        "build",
        "Matrix, lock and build (`gpuship matrix|lock|build`)",
        matrix_rules.RULES + builder_rules.RULES,
    ),
    Stage("verify", "GPU host verification (`gpuship verify|fleet`)", verify_rules.RULES),
    Stage("route", "Routing before the queue (`gpuship route`)", route_rules.RULES),
    Stage("probe", "Load and memory probe (`gpuship probe`)", probe_rules.RULES),
    Stage("release", "Release (`gpuship promote|rollback|prune`)", release_rules.RULES),
    Stage("kb", "CUDA knowledge base (`gpuship kb`)", kb_rules.RULES),
    Stage("docs", "Generated reference pages (`gpuship docs --check`)", docs_rules.RULES),
)


def all_rules() -> list[CatalogEntry]:
    """Every rule of every stage, in catalog order."""
    return catalog_entries(STAGES)


def rule_overrides(severity: Mapping[str, str], lint: LintSettings) -> dict[str, Severity | None]:
    """The `Overrides` gpuship.yaml sets: `rules:` for any command's rules, then `lint:`
    (enable, disable, severity) for Dockerfile rules, which keeps its meaning and wins."""
    every = tuple(entry.rule for entry in all_rules())
    return resolve_overrides((OverrideSource("rules", every, severity), lint.override_source()))


@dataclass(frozen=True)
class RuleRow:
    """One rule as `gpuship rules` lists it; `severity` is what gpuship.yaml makes of it."""

    id: str
    name: str
    stage: str
    category: str
    default_severity: str
    severity: str  # error | warning | note | off
    summary: str
    hadolint: tuple[str, ...]
    help_uri: str


@dataclass(frozen=True)
class RulesResult:
    """The categories rules are grouped by, and the rules listed."""

    categories: tuple[str, ...]
    rules: tuple[RuleRow, ...]


def rules_report(
    command: str, stage: str | None, category: str | None, overrides: Overrides
) -> Report:
    """The catalog (of one stage, one category) with the severity `overrides` give each rule."""
    entries = [
        entry
        for entry in all_rules()
        if stage in (None, entry.stage.name) and category in (None, entry.rule.category)
    ]
    rows = tuple(_row(entry, overrides) for entry in entries)
    table = Table(
        title="gpuship rules",
        headers=("id", "name", "stage", "category", "severity", "hadolint"),
        rows=tuple(
            (row.id, row.name, row.stage, row.category, row.severity, ",".join(row.hadolint))
            for row in rows
        ),
    )
    return Report(
        command=command,
        result=RulesResult(CATEGORIES, rows),
        rules={entry.rule.id: entry.rule for entry in entries},
        tables=[table],
        headline=f"{len(rows)} rules",
    )


def _row(entry: CatalogEntry, overrides: Overrides) -> RuleRow:
    rule = entry.rule
    severity = overrides.get(rule.id, rule.severity)
    return RuleRow(
        id=rule.id,
        name=rule.name,
        stage=entry.stage.name,
        category=rule.category,
        default_severity=rule.severity.value,
        severity=severity.value if severity else "off",
        summary=rule.summary,
        hadolint=rule.hadolint,
        help_uri=rule.help_uri,
    )
