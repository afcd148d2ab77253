"""The JSON Schema of a command's `--format json` document, made from its result type.

pydantic's `TypeAdapter` reads the result dataclasses (imported only here, on demand, so no
command pays for pydantic to run). The schema is closed: every object lists exactly the
keys `to_json` writes, keys always written are required, and `flattened()` mappings become
the object's `additionalProperties`; so a test that validates a command's real output
against it fails when the output and the type disagree.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpuship.report.json_format import Document
from gpuship.report.model import DOCS_BASE
from gpuship.report.result import FLATTEN, OMIT_NONE, PUBLISHED_NAMES

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def document_schema(command: str, result_type: object) -> dict[str, Any]:
    """The schema of `gpuship COMMAND --format json` for a command whose result is
    `result_type` (a dataclass, a pydantic model, or a union of them)."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(Document[result_type])  # type: ignore[valid-type]
    schema = adapter.json_schema(mode="serialization", schema_generator=_closed_generator())
    schema["properties"]["command"] = {"const": command, "type": "string"}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        # Where `gpuship docs` publishes it (docs/results/), as rules' help_uri are.
        "$id": f"{DOCS_BASE}/results/{command}.schema.json",
        **schema,
        "title": f"gpuship {command} --format json",
    }


def _closed_generator() -> type[Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class Closed(GenerateJsonSchema):
        """Result dataclasses as closed objects whose always-written keys are required."""

        def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
            out = super().dataclass_schema(schema)
            published = PUBLISHED_NAMES.get(schema["cls"].__qualname__)
            if published is not None:
                out["title"] = published
            properties = out.get("properties", {})
            required = []
            out["additionalProperties"] = False
            for field in dataclasses.fields(schema["cls"]):
                if field.metadata.get(FLATTEN):
                    flat = properties.pop(field.name)
                    out["additionalProperties"] = flat.get("additionalProperties", True)
                elif not field.metadata.get(OMIT_NONE):
                    required.append(field.name)
            out["required"] = required
            return out

        def normalize_name(self, name: str) -> str:
            # A `$defs` key is made from the class name: a published name replaces it.
            return super().normalize_name(PUBLISHED_NAMES.get(name, name))

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def field_is_required(self, field: Any, total: bool) -> bool:
            # model_dump writes every field of a pydantic model (an audit, a release record).
            return True

    return Closed
