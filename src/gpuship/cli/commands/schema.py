"""`gpuship schema`: the JSON Schema of `gpuship.yaml`, or with `--result COMMAND` of that
command's `--format json` document, for editors, CI validation and scripts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpuship.cli.context import Context
from gpuship.cli.stages import command_names
from gpuship.report import Report

NAME = "schema"
HELP = "print the JSON Schema of gpuship.yaml, or of a command's --format json (--result)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--result COMMAND`."""
    parser.add_argument(
        "--result",
        metavar="COMMAND",
        choices=command_names(),
        help="the schema of `gpuship COMMAND --format json` instead of gpuship.yaml's",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Return the schema as the report's result and document."""
    from gpuship.report.result import JsonDocument

    if args.result:
        from gpuship.cli.registry import load_command
        from gpuship.report.result_schema import document_schema

        schema = document_schema(args.result, load_command(args.result).result_type())
    else:
        from gpuship.cli.config_catalog import config_schema

        schema = config_schema()
    return Report(command=NAME, result=JsonDocument(schema), document=json.dumps(schema, indent=2))


def result_type() -> object:
    """A JSON Schema document: an object (its own meta-schema says the rest)."""
    return dict[str, Any]
