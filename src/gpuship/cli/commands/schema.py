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


def config_schema() -> dict[str, object]:
    """The JSON Schema of the config file, with YAML (kebab-case) key names."""
    from gpuship.config.model import GpushipConfig

    schema = GpushipConfig.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpuship.yaml"
    return schema


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Return the schema as the report's result and document."""
    schema = config_schema()
    return Report(command=NAME, result=schema, document=json.dumps(schema, indent=2))
