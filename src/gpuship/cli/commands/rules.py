"""`gpuship rules`: every stage's rule catalog with categories, severities and docs links."""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.report import CATEGORIES, Report
from gpuship.rules_catalog import STAGES, rules_report

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
    return rules_report(NAME, args.stage, args.category, ctx.rule_overrides)


def result_type() -> object:
    """The categories and the rules."""
    from gpuship.rules_catalog import RulesResult

    return RulesResult
