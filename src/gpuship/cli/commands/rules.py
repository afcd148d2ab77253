"""`gpuship rules`: every stage's rule catalog with categories, severities and docs links."""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.report import CATEGORIES, Report, Table
from gpuship.rules_catalog import STAGES, all_rules

NAME = "rules"
HELP = "list the rule catalog of every stage (ids, categories, severities, hadolint equivalents)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Optional stage and category filters."""
    parser.add_argument(
        "--stage", choices=[stage.name for stage in STAGES], help="only rules of this stage"
    )
    parser.add_argument("--category", choices=CATEGORIES, help="only rules of this category")


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """The catalog as a table and as JSON, with the severity gpuship.yaml sets for each."""
    overrides = ctx.rule_overrides
    entries = [
        entry
        for entry in all_rules()
        if (args.stage is None or entry.stage.name == args.stage)
        and (args.category is None or entry.rule.category == args.category)
    ]

    def effective(rule_id: str, default: str) -> str:
        if rule_id not in overrides:
            return default
        severity = overrides[rule_id]
        return severity.value if severity else "off"

    rows = [
        {
            "id": e.rule.id,
            "name": e.rule.name,
            "stage": e.stage.name,
            "category": e.rule.category,
            "default_severity": e.rule.severity.value,
            "severity": effective(e.rule.id, e.rule.severity.value),
            "summary": e.rule.summary,
            "hadolint": list(e.rule.hadolint),
            "help_uri": e.rule.help_uri,
        }
        for e in entries
    ]
    table = Table(
        title="gpuship rules",
        headers=("id", "name", "stage", "category", "severity", "hadolint"),
        rows=tuple(
            (
                e.rule.id,
                e.rule.name,
                e.stage.name,
                e.rule.category,
                effective(e.rule.id, e.rule.severity.value),
                ",".join(e.rule.hadolint),
            )
            for e in entries
        ),
    )
    return Report(
        command=NAME,
        result={"categories": list(CATEGORIES), "rules": rows},
        rules={e.rule.id: e.rule for e in entries},
        tables=[table],
        headline=f"{len(rows)} rules",
    )
