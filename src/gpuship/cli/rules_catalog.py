"""Every command's rules in one list: for `gpuship rules`, the generated rule pages and the
severity overrides of gpuship.yaml (`rules_overrides`).

Each stage keeps its catalog next to its checks, in the same shape: `RULES: tuple[Rule, ...]`
in its `rules.py`. This module only gathers them under the headings `cli/stages.py` declares,
so a rule id (GSL lint, GSI image, GSB build, GSV verify, GSQ route, GSP probe, GSR release,
GSK kb, GSD docs) is documented wherever it is used. It sits in the CLI layer because it
imports every stage; the docs stage gets the catalogs from its command, as plain data.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gpuship.cli.stages import STAGES, RuleHeading, StageSpec, rule_headings, rule_switches
from gpuship.report import CATEGORIES, Report, Rule, Severity, Table
from gpuship.report.catalog import (
    CatalogEntry,
    Overrides,
    OverrideSource,
    RuleCatalog,
    catalog_entries,
    resolve_overrides,
)


class RuleSwitches(Protocol):
    """A config section whose keys switch its stage's rules (`lint:`)."""

    @property
    def enable(self) -> Sequence[str]: ...

    @property
    def disable(self) -> Sequence[str]: ...

    @property
    def severity(self) -> Mapping[str, str]: ...


def stage_rules(stage: StageSpec) -> tuple[Rule, ...]:
    """The `RULES` of one stage (importing its catalog, not its checks)."""
    rules: tuple[Rule, ...] = importlib.import_module(stage.rules_module).RULES
    return rules


@functools.cache
def rule_catalogs() -> tuple[RuleCatalog, ...]:
    """Every stage's rules under its heading, in stage order."""
    return tuple(
        RuleCatalog(heading.name, heading.title, _rules_under(heading))
        for heading in rule_headings()
    )


def _rules_under(heading: RuleHeading) -> tuple[Rule, ...]:
    return tuple(rule for stage in STAGES if stage.rules == heading for rule in stage_rules(stage))


def all_rules() -> list[CatalogEntry]:
    """Every rule of every stage, in catalog order."""
    return catalog_entries(rule_catalogs())


def rule_overrides(
    severity: Mapping[str, str], switches: Mapping[str, RuleSwitches]
) -> dict[str, Severity | None]:
    """The `Overrides` gpuship.yaml sets: `rules:` for any command's rules, then each section
    that switches its stage's rules (`lint:` enable, disable, severity: by section key), which
    keeps its meaning and wins."""
    every = tuple(entry.rule for entry in all_rules())
    sources = [OverrideSource("rules", every, severity)]
    for key, stage in rule_switches().items():
        section = switches.get(key)
        if section is not None:
            sources.append(
                OverrideSource(
                    key,
                    stage_rules(stage),
                    section.severity,
                    tuple(section.enable),
                    tuple(section.disable),
                )
            )
    return resolve_overrides(sources)


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
        if stage in (None, entry.catalog.name) and category in (None, entry.rule.category)
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
        stage=entry.catalog.name,
        category=rule.category,
        default_severity=rule.severity.value,
        severity=severity.value if severity else "off",
        summary=rule.summary,
        hadolint=rule.hadolint,
        help_uri=rule.help_uri,
    )
