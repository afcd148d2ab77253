"""Looking rules up in a stage's catalog: the one helper every stage uses.

Every stage declares its catalog the same way, in its own `rules.py`:

    RULES: tuple[Rule, ...] = (
        Rule(id="GSK101", name="cuda-require-unsatisfied", category="cuda", ...),
    )

and looks rules up with `rules_by_id(RULES)` (a read-only mapping, built once per catalog)
rather than keeping a `BY_ID` dict of its own. `gpuship rules` and the generated rule pages
gather the stages' `RULES` in `gpuship.cli.rules_catalog` (as `RuleCatalog`s, defined here so
the docs stage can be handed the catalog without importing the stages).

Severity overrides (`rules:` and `lint:` in gpuship.yaml) are resolved by `resolve_overrides`
(called by `rules_catalog.rule_overrides` with every catalog) into `Overrides`;
`apply_overrides` applies them, once, to every command's Report at the CLI boundary, so no
stage sets a configured severity itself. Lint's engine reads only which rules they turn off
(a rule turned off is not checked, so no pragma counts for it), and lint counts its findings
by severity in `Report.summarise`, after they are applied.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from gpuship.errors import InputError
from gpuship.report.model import Report, Rule, Severity

# Rule id -> the severity gpuship.yaml sets for it, None when it turns the rule off. Only
# overridden rules are present: a rule that is not keeps the severity its stage gave each
# finding (a finding may be milder than its rule's default).
Overrides = Mapping[str, Severity | None]


@functools.cache
def rules_by_id(rules: tuple[Rule, ...]) -> Mapping[str, Rule]:
    """`{rule.id: rule}` for a catalog; shared between callers, so it is read-only."""
    return MappingProxyType({rule.id: rule for rule in rules})


def resolve(rules: Iterable[Rule], key: str) -> list[Rule]:
    """The rules a config or pragma key names: an id, else a name, else a category, else
    a hadolint DL code (so `# hadolint ignore=DL3008` silences our equivalent too)."""
    rules = tuple(rules)
    upper = key.strip().upper()
    lowered = key.strip().lower()
    for matches in (
        [rule for rule in rules if rule.id == upper],
        [rule for rule in rules if rule.name == lowered],
        [rule for rule in rules if rule.category == lowered],
    ):
        if matches:
            return matches
    return [rule for rule in rules if upper in rule.hadolint]


@dataclass(frozen=True)
class OverrideSource:
    """One config section that sets rule severities, and the catalog its keys name rules in."""

    section: str  # for messages: "rules", "lint"
    catalog: tuple[Rule, ...]
    severity: Mapping[str, str]  # key -> "error" | "warning" | "note" | "off"
    enable: tuple[str, ...] = ()  # non-empty: every other rule of the catalog is off
    disable: tuple[str, ...] = ()


def resolve_overrides(sources: Sequence[OverrideSource]) -> dict[str, Severity | None]:
    """The `Overrides` the sources set. Keys are rule ids, names or categories (or hadolint
    codes). `enable`/`disable` come first, then severities, least specific first (a category,
    then a name, then an id); at the same level a later source wins. A key that names
    nothing, or names a rule that is not configurable, is an InputError."""
    overrides: dict[str, Severity | None] = {}
    for source in sources:
        if source.enable:
            on = {rule.id for key in source.enable for rule in _named(source, key, "enable")}
            overrides.update({rule.id: None for rule in source.catalog if rule.id not in on})
        for key in source.disable:
            overrides.update({rule.id: None for rule in _named(source, key, "disable")})
    entries = [(source, key, value) for source in sources for key, value in source.severity.items()]
    for source, key, value in sorted(entries, key=lambda e: _specificity(e[0].catalog, e[1])):
        for rule in _named(source, key, "severity"):
            overrides[rule.id] = None if value == "off" else Severity(value)
    return overrides


class RuleKeyError(InputError):
    """A key that names no configurable rule. `path` is where the key stands in gpuship.yaml
    (`("rules", "nope")`, `("lint", "enable", 2)`), so the CLI can name its line or the
    variable that set it."""

    def __init__(self, message: str, path: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.path = path


def _named(source: OverrideSource, key: str, field: str) -> list[Rule]:
    """The configurable rules `key` names; a category leaves the others out."""
    path: tuple[str | int, ...] = (source.section, key)
    if field in ("enable", "disable"):
        path = (source.section, field, getattr(source, field).index(key))
    elif source.section != "rules":
        path = (source.section, field, key)
    where = ".".join(str(part) for part in path[:-1])  # `rules`, `lint.enable`, ...
    found = resolve(source.catalog, key)
    if not found:
        raise RuleKeyError(
            f"{where}: '{key}' names no rule id, rule name or category (see `gpuship rules`)",
            path,
        )
    if len(found) == 1 and not found[0].configurable:
        raise RuleKeyError(
            f"{where}: {found[0].id} ({found[0].name}) reports what happened, not a "
            "judgement; its severity cannot be changed",
            path,
        )
    return [rule for rule in found if rule.configurable]


def _specificity(catalog: tuple[Rule, ...], key: str) -> int:
    """2 for a rule id, 1 for a rule name, 0 for a category or a hadolint code."""
    found = resolve(catalog, key)
    if len(found) == 1 and found[0].id == key.strip().upper():
        return 2
    return 1 if len(found) == 1 and found[0].name == key.strip().lower() else 0


def apply_overrides(report: Report, overrides: Overrides) -> None:
    """Set the configured severity of each finding, and drop findings of rules turned off.

    A stage verdict that failed (`report.failed`: verify's checks, fleet, `lock --check`) only
    through error findings the config lowered or turned off no longer fails; the stage's own
    result data still says what it found. Rules whose findings report what happened (a failed
    write) are never overridden, so such a failure always stands. Then the stage's
    `summarise`, if any, sees the findings as they will be reported.
    """
    if overrides:
        _configure(report, overrides)
    if report.summarise is not None:
        report.summarise(report)


def _configure(report: Report, overrides: Overrides) -> None:
    findings = []
    lowered_error = False
    for finding in report.findings:
        if finding.rule not in overrides:
            findings.append(finding)
            continue
        severity = overrides[finding.rule]
        lowered_error |= finding.severity is Severity.ERROR and severity is not Severity.ERROR
        if severity is not None:
            findings.append(dataclasses.replace(finding, severity=severity))
    report.findings = findings
    if lowered_error and not any(f.severity is Severity.ERROR for f in findings):
        report.failed = False


@dataclass(frozen=True)
class RuleCatalog:
    """The rules of one or more stages, listed under one heading (`name`: the `stage` of each
    rule in `gpuship rules`; `title`: the heading of docs/rules/)."""

    name: str
    title: str
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class CatalogEntry:
    """A rule and the catalog that lists it."""

    catalog: RuleCatalog
    rule: Rule


def catalog_entries(catalogs: Sequence[RuleCatalog]) -> list[CatalogEntry]:
    """Every rule of every catalog, in catalog order."""
    return [CatalogEntry(catalog, rule) for catalog in catalogs for rule in catalog.rules]
