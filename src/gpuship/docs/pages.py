"""Every page `gpuship docs` generates, and the text each should have."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuship.docs.actions import (
    ActionDoc,
    discover_actions,
    render_action_page,
    render_inputs_table,
    render_outputs_table,
)
from gpuship.docs.config_reference import render_config_reference
from gpuship.docs.knowledge_module import knowledge_module
from gpuship.docs.result_reference import result_pages
from gpuship.docs.rule_pages import rule_pages
from gpuship.errors import InputError
from gpuship.report.catalog import RuleCatalog

README_START = "<!-- gpuship:actions:start -->"
README_END = "<!-- gpuship:actions:end -->"


def generated_pages(
    root: Path,
    result_types: Mapping[str, object],
    catalogs: Sequence[RuleCatalog],
    config_schema: dict[str, Any],
) -> dict[Path, str]:
    """Every generated file and the text it should have; `result_types` is each command's
    result type, by command name, `catalogs` every stage's rules and `config_schema` gpuship.yaml's
    JSON Schema (both gathered by the docs command, which sees every stage)."""
    actions = discover_actions(root)
    pages = {
        root / "docs" / "actions" / f"{doc.slug}.md": render_action_page(doc) for doc in actions
    }
    index = ["# Action reference", "", "| action | description |", "|---|---|"]
    index += [
        f"| [`{doc.uses}`]({doc.slug}.md) | {' '.join(doc.metadata.description.split())} |"
        for doc in actions
    ]
    pages[root / "docs" / "actions" / "README.md"] = "\n".join(index) + "\n"
    pages[root / "docs" / "config.md"] = render_config_reference(config_schema)
    pages.update(rule_pages(root / "docs" / "rules", catalogs))
    pages.update(result_pages(root / "docs" / "results", result_types))
    knowledge = root / "src" / "gpuship" / "cuda" / "data" / "knowledge.yaml"
    if knowledge.is_file():  # gpuship's own checkout: the knowledge base as Python too
        pages[knowledge.parent.parent / "knowledge_data.py"] = knowledge_module(
            knowledge.read_bytes()
        )
    readme = root / "README.md"
    if readme.is_file():
        pages[readme] = _readme_with_action_tables(readme, actions)
    return pages


def _readme_with_action_tables(readme: Path, actions: list[ActionDoc]) -> str:
    text = readme.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise InputError(f"{readme}: missing the {README_START} ... {README_END} markers")
    sections = []
    for doc in actions:
        sections += [
            f"### `{doc.uses}`",
            "",
            " ".join(doc.metadata.description.split()),
            "",
            render_inputs_table(doc.metadata),
            "",
            render_outputs_table(doc.metadata),
            "",
        ]
    body = "\n".join([README_START, "", *sections, README_END])
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.DOTALL)
    return pattern.sub(lambda _: body, text, count=1)
