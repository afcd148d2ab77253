"""Check a command's real `--format json` output against the schema gpuship publishes for it.

Every test that runs a command with `--format json` passes the output through
`checked(text_or_document)`: it is validated against `gpuship schema --result COMMAND` (made
from the command's result type), so a result that drifts from its type fails the test that
produced it. Shared by unit and integration tests (tests/ is on sys.path).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Sequence
from typing import Any

import jsonschema

from gpuship.cli.registry import load_command
from gpuship.report.result_schema import document_schema


@functools.cache
def validator(command: str) -> jsonschema.protocols.Validator:
    schema = document_schema(command, load_command(command).result_type())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def checked(output: str | dict[str, Any]) -> dict[str, Any]:
    """The JSON document, after validating it against its command's published schema."""
    document = json.loads(output) if isinstance(output, str) else output
    errors = sorted(validator(document["command"]).iter_errors(document), key=str)
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
    )
    return document


def check_output(argv: Sequence[str], stdout: str) -> None:
    """Validate `stdout` when the command was asked for `--format json` and printed a document
    (a usage or input error prints none); a runner for any command calls this."""
    asked = any(a == "--format" and b == "json" for a, b in itertools.pairwise(argv))
    if asked and stdout.lstrip().startswith("{"):
        checked(stdout[: stdout.rindex("}") + 1])
