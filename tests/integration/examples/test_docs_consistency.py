"""The hand-written operations docs name only rules, commands and messages that exist.

docs/troubleshooting.md is keyed by the exact error messages users see (taken from the CUDA
knowledge base's sources, shared/reference/cuda-compat.md); it and docs/operations/ point to
rules of every stage (GSLnnn, GSInnn, GSBnnn, GSVnnn, GSRnnn, GSKnnn... and their names) and
gpuship commands. When a rule is renamed or a command removed, these tests name the page that
went stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuship.cli.registry import load_commands
from gpuship.cli.rules_catalog import all_rules

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RULES_BY_ID = {entry.rule.id: entry.rule for entry in all_rules()}
RULE_NAMES = {rule.name for rule in RULES_BY_ID.values()}
PAGES = sorted(
    [
        ROOT / "docs" / "troubleshooting.md",
        ROOT / "docs" / "quickstart.md",
        *(ROOT / "docs" / "operations").glob("*.md"),
    ]
)
# The messages the troubleshooting page is keyed by, verbatim.
USER_MESSAGES = (
    "no kernel image is available for execution on the device",
    "CUDA driver version is insufficient for CUDA runtime version",
    "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update "
    "your driver to a newer version, or use an earlier cuda container",
    "torch.cuda.is_available()",
    "forward compatibility was attempted on non supported HW",
)


def _text(page: Path) -> str:
    # Messages may wrap across lines in the Markdown source.
    return re.sub(r"\s+", " ", page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("message", USER_MESSAGES)
def test_troubleshooting_is_keyed_by_the_exact_message(message: str) -> None:
    assert message in _text(ROOT / "docs" / "troubleshooting.md")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_rules_named_in_the_page_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    ids = set(re.findall(r"\bGS[A-Z]\d{3}\b", text))
    assert ids <= set(RULES_BY_ID), sorted(ids - set(RULES_BY_ID))
    verify_names = set(re.findall(r"`(verify-[a-z-]+)`", text))
    assert verify_names <= RULE_NAMES, sorted(verify_names - RULE_NAMES)
    # Rule names given in backticks next to their id, e.g. `GSL506` (`cuda-arch-list-missing`).
    for rule_id, name in re.findall(r"`(GS[A-Z]\d{3})` \(`([a-z-]+)`\)", text):
        assert RULES_BY_ID[rule_id].name == name, f"{rule_id} is not named {name}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_commands_named_in_the_page_exist(page: Path) -> None:
    commands = {command.NAME for command in load_commands()}
    named = set(re.findall(r"`gpuship ([a-z][a-z-]*)", page.read_text(encoding="utf-8")))
    assert named <= commands, sorted(named - commands)


def test_examples_readme_lists_every_example() -> None:
    readme = (ROOT / "workflows-examples" / "README.md").read_text(encoding="utf-8")
    examples = {path.name for path in (ROOT / "workflows-examples").glob("*.yml")}
    listed = set(re.findall(r"\[`([a-z-]+\.yml)`\]\(\1\)", readme))
    assert listed == examples
