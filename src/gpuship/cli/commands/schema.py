"""`gpuship schema`: the JSON Schema of `gpuship.yaml`, for editors and CI validation."""

from __future__ import annotations

import argparse
import json

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "schema"
HELP = "print the JSON Schema of gpuship.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`schema` takes no arguments of its own."""


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Return the schema as the report's result and document."""
    from gpuship.config.schema import config_schema

    schema = config_schema()
    return Report(command=NAME, result=schema, document=json.dumps(schema, indent=2))
