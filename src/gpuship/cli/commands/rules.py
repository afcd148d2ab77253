"""`gpuship rules`: every stage's rule catalog with categories, severities and docs links."""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.cli.stages import rule_headings
from gpuship.report import CATEGORIES, Report

NAME = "rules"
HELP = "list the rule catalog of every stage (ids, categories, severities, hadolint equivalents)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Optional stage and category filters."""
    # The headings `cli/stages.py` declares: naming them imports no stage's rules (~5 ms).
    stages = [heading.name for heading in rule_headings()]
    parser.add_argument("--stage", choices=stages, help="only rules of this stage")
    parser.add_argument("--category", choices=CATEGORIES, help="only rules of this category")


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """The catalog as a table and as JSON, with the severity gpuship.yaml sets for each."""
    from gpuship.cli.rules_catalog import rules_report

    return rules_report(NAME, args.stage, args.category, ctx.rule_overrides)


def result_type() -> object:
    """The categories and the rules."""
    from gpuship.cli.rules_catalog import RulesResult

    return RulesResult
