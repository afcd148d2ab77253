"""The JSON Schema of a command's `--format json` document, made from its result type.

pydantic's `TypeAdapter` reads the result dataclasses (imported only here, on demand, so no
command pays for pydantic to run). The schema is closed: every object lists exactly the
keys `to_json` writes, keys always written are required, and `flattened()` mappings become
the object's `additionalProperties`; so a test that validates a command's real output
against it fails when the output and the type disagree. A result dataclass renamed in the code
(not a generic one) keeps the name users' schemas know with `PUBLISHED_NAME: ClassVar[str]`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpuship.report.json_format import Document
from gpuship.report.model import DOCS_BASE
from gpuship.report.result import FLATTEN, OMIT_NONE

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def document_schema(command: str, result_type: object) -> dict[str, Any]:
    """The schema of `gpuship COMMAND --format json` for a command whose result is
    `result_type` (a dataclass, a pydantic model, or a union of them)."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(Document[result_type])  # type: ignore[valid-type]
    published: dict[str, str] = {}
    schema = adapter.json_schema(
        mode="serialization", schema_generator=_closed_generator(published)
    )
    schema = _published_names(schema, published)
    schema["properties"]["command"] = {"const": command, "type": "string"}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        # Where `gpuship docs` publishes it (docs/results/), as rules' help_uri are.
        "$id": f"{DOCS_BASE}/results/{command}.schema.json",
        **schema,
        "title": f"gpuship {command} --format json",
    }


def _published_names(schema: dict[str, Any], published: dict[str, str]) -> dict[str, Any]:
    """`schema` with each renamed result type under the name it was published as: its
    `$defs` key, its title and every `$ref` to it (the keys kept in pydantic's sorted order)."""
    if not published:
        return schema
    refs = {f"#/$defs/{old}": f"#/$defs/{new}" for old, new in published.items()}

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: refs.get(v, v) if key == "$ref" else rename(v) for key, v in value.items()}
        return [rename(item) for item in value] if isinstance(value, list) else value

    renamed: dict[str, Any] = rename(schema)
    defs = {published.get(key, key): value for key, value in renamed["$defs"].items()}
    renamed["$defs"] = dict(sorted(defs.items()))
    return renamed


def _closed_generator(published: dict[str, str]) -> type[Any]:
    """The schema generator; it notes in `published` each result type that keeps the name it
    was published under (`PUBLISHED_NAME`), class name -> that name."""
    from pydantic.json_schema import GenerateJsonSchema

    class Closed(GenerateJsonSchema):
        """Result dataclasses as closed objects whose always-written keys are required."""

        def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
            out = super().dataclass_schema(schema)
            name = getattr(schema["cls"], "PUBLISHED_NAME", None)
            if name is not None:
                published[schema["cls"].__name__] = out["title"] = name
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

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def field_is_required(self, field: Any, total: bool) -> bool:
            # model_dump writes every field of a pydantic model (an audit, a release record).
            return True

    return Closed
