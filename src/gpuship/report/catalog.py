"""Looking rules up in a stage's catalog: the one helper every stage uses.

Every stage declares its catalog the same way, in its own `rules.py`:

    RULES: tuple[Rule, ...] = (
        Rule(id="GSK101", name="cuda-require-unsatisfied", category="cuda", ...),
    )

and looks rules up with `rules_by_id(RULES)` (a read-only mapping, built once per catalog)
rather than keeping a `BY_ID` dict of its own. `gpuship rules` and the generated rule pages
gather the stages' `RULES` in `gpuship.rules_catalog`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from gpuship.report.model import Rule


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
