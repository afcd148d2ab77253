"""Every command's `--format json` has a published schema made from its typed result.

The real outputs are checked against these schemas by the tests that run each command (they
call `json_results.check_output`); here: every command has one, the schemas are closed, and
`to_json` writes what the types say.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest

from gpuship.cli.main import main
from gpuship.cli.registry import load_command
from gpuship.cli.stages import command_names
from gpuship.report.result import JsonDocument, flattened, omitted_if_none, to_json
from gpuship.report.result_schema import document_schema
from json_results import checked, validator

REPO = Path(__file__).parents[3]


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), {}, out, err)
    return code, out.getvalue()


@pytest.mark.parametrize("command", command_names())
def test_every_command_has_a_published_schema(command: str) -> None:
    # load_command(...).result_type() raises for a command module that has none.
    schema = document_schema(command, load_command(command).result_type())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["command"] == {"const": command, "type": "string"}
    assert set(schema["required"]) >= {"tool", "failed", "findings", "summary", "result"}
    published = REPO / "docs" / "results" / f"{command}.schema.json"
    assert json.loads(published.read_text()) == schema  # `gpuship docs` keeps it current
    code, out = run("schema", "--result", command)
    assert code == 0 and json.loads(out) == schema


def test_schema_command_output_is_checked_against_its_own_schema() -> None:
    code, out = run("schema", "--result", "lint", "--format", "json")
    document = checked(out)
    assert code == 0 and document["result"]["title"] == "gpuship lint --format json"
    code, out = run("schema", "--format", "json")
    jsonschema.Draft202012Validator.check_schema(checked(out)["result"])  # gpuship.yaml's
    code, _ = run("schema", "--result", "frobnicate")
    assert code == 2


def test_schemas_are_closed(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.12\nUSER 1\n")
    code, out = run("lint", str(tmp_path), "--format", "json")
    document = checked(out)
    assert code == 0
    document["result"]["files"][0]["extra"] = 1
    assert not validator("lint").is_valid(document)  # a key the type does not declare
    del document["result"]["files"][0]["extra"]
    del document["result"]["counts"]
    assert not validator("lint").is_valid(document)  # a key the JSON always has
    document["result"]["counts"] = {"error": 0, "warning": 0, "note": "0"}
    assert not validator("lint").is_valid(document)  # a wrong type


@dataclass(frozen=True)
class Inner:
    size: int


@dataclass(frozen=True, kw_only=True)
class Sample:
    name: str
    axes: Mapping[str, str] = flattened()
    inner: tuple[Inner, ...]
    maybe: str | None
    sometimes: Inner | None = omitted_if_none()


def test_to_json_writes_what_the_types_say() -> None:
    sample = Sample(name="a", axes={"cuda": "12.4"}, inner=(Inner(1),), maybe=None)
    assert to_json(sample) == {"name": "a", "cuda": "12.4", "inner": [{"size": 1}], "maybe": None}
    assert list(to_json(sample)) == ["name", "cuda", "inner", "maybe"]  # field order kept
    with_it = Sample(name="a", inner=(), maybe="x", sometimes=Inner(2))
    assert to_json(with_it)["sometimes"] == {"size": 2}
    assert to_json(JsonDocument({"$schema": "x"})) == {"$schema": "x"}
    with pytest.raises(TypeError, match="Path is not a JSON result value"):
        to_json(Path("x"))
    schema = document_schema("sample", Sample)["$defs"]["Sample"]
    assert schema["additionalProperties"] == {"type": "string"}  # the flattened axes
    assert schema["required"] == ["name", "inner", "maybe"]


@dataclass(frozen=True)
class _Zeta:
    n: int


@dataclass(frozen=True)
class _Renamed:
    PUBLISHED_NAME: ClassVar[str] = "Alpha"
    inner: _Zeta


@dataclass(frozen=True)
class _Outer:
    first: _Renamed
    again: tuple[_Renamed, ...]


def test_a_renamed_result_type_keeps_the_name_it_was_published_under() -> None:
    schema = document_schema("x", _Outer)
    defs = schema["$defs"]
    assert "_Renamed" not in defs and defs["Alpha"]["title"] == "Alpha"
    assert list(defs) == sorted(defs)  # where pydantic would have put it
    result = defs["_Outer"]["properties"]
    assert result["first"] == {"$ref": "#/$defs/Alpha"}
    assert result["again"]["items"] == {"$ref": "#/$defs/Alpha"}
    assert defs["Alpha"]["properties"]["inner"] == {"$ref": "#/$defs/_Zeta"}
    # The build stage's NotBuilt is published as BuildFailed (builder/engine.py's exception
    # has that name now).
    build = document_schema("build", load_command("build").result_type())
    assert "BuildFailed" in build["$defs"] and "NotBuilt" not in json.dumps(build)
