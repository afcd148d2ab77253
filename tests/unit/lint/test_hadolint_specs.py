"""hadolint's own spec cases run through gpuship (hadolint_spec_cases.py): for each hadolint rule
that a gpuship rule names as its equivalent, gpuship agrees with every case, except those that
say why it deliberately answers otherwise, where it must still answer otherwise (so a change to
either side shows)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hadolint_spec_cases import CASES, SpecCase

from conftest import Linter
from gpuship.lint.config import LintConfig
from gpuship.lint.rules import RULES

# DL3013 also judges VCS requirements (`git+https://...` without a ref), which are GSL106's.
_ALSO = {"DL3013": {"GSL106"}}
_RUN = re.compile(r"(?i)run\b")


def gpuship_rules(code: str) -> set[str]:
    """The gpuship rules that answer for hadolint rule `code`."""
    return {rule.id for rule in RULES if code in rule.hadolint} | _ALSO.get(code, set())


def dockerfile(case: SpecCase) -> str:
    """The case's Dockerfile as hadolint's spec runs it: its RUNs wrapped in ONBUILD for the
    `onBuild` forms, and a FROM where the snippet has none."""
    lines: list[str] = []
    continued = False
    for line in case.lines:
        wrapped = case.onbuild and not continued and _RUN.match(line)
        lines.append("ONBUILD " + line if wrapped else line)
        continued = line.rstrip().endswith("\\")
    if not any(re.match(r"(?i)from\s", line) for line in lines):
        lines.insert(0, "FROM scratch")
    return "\n".join(lines) + "\n"


def _case_id(case: SpecCase) -> str:
    return f"{case.code}-{CASES.index(case)}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_gpuship_answers_hadolint_spec_case(lint: Linter, case: SpecCase) -> None:
    config = LintConfig.model_validate({"trusted-registries": list(case.trusted)})
    rules = gpuship_rules(case.code)
    found = [f for f in lint(dockerfile(case), config=config) if f.rule in rules]
    agrees = len(found) == case.count if case.count is not None else bool(found) == case.catches
    assert agrees is not bool(case.differs), (
        case.title,
        case.differs or "gpuship must agree",
        [(f.rule, f.location, f.message) for f in found],
    )


def test_every_equivalent_hadolint_rule_has_its_spec_cases() -> None:
    named = {code for rule in RULES for code in rule.hadolint}
    assert set(Counter(case.code for case in CASES)) == named
