"""The `gpuship.yaml` reference page, generated from the config's JSON Schema."""

from __future__ import annotations

import json
from typing import Any


def render_config_reference(schema: dict[str, Any]) -> str:
    """One table per section of `schema` (gpuship.yaml's JSON Schema, which the docs command
    gathers from the stages), keys in YAML spelling, with types, defaults and descriptions."""
    definitions: dict[str, Any] = schema.get("$defs", {})
    lines = [
        "# `gpuship.yaml` reference",
        "",
        "Generated from the JSON Schema (`gpuship schema`); editors can validate the file with it.",
        "Precedence, lowest first: defaults < this file < `GPUSHIP_<KEY>` environment variables",
        "(`GPUSHIP_<SECTION>__<KEY>` for nested keys, e.g. `GPUSHIP_LINT__REQUIRE_DIGEST=true`,",
        "one rule's severity: `GPUSHIP_RULES__GSL103=off`, `GPUSHIP_RULES__PRUNE_DELETE=error`)",
        "< command-line flags and action inputs. Unknown keys are errors, and so is a key given",
        "twice in one mapping (both lines are named).",
        "",
    ]
    lines += _section("top level", schema, definitions, "")
    return "\n".join(lines) + "\n"


def _section(title: str, schema: dict[str, Any], definitions: dict[str, Any], at: str) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    lines = [f"## {title}", ""]
    if schema.get("description"):
        lines += [" ".join(str(schema["description"]).split()), ""]
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    nested: list[tuple[str, dict[str, Any]]] = []
    for key, spec in properties.items():
        model = _referenced_model(spec, definitions)
        type_text = _type_text(spec, definitions)
        default = spec.get("default")
        default_text = f"`{json.dumps(default)}`" if "default" in spec and default != {} else ""
        description = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
        lines.append(f"| `{key}` | {type_text} | {default_text} | {description} |")
        if model is not None:
            nested.append((f"{at}{key}", model))
    lines.append("")
    for path, model in nested:
        lines += _section(f"`{path}`", model, definitions, f"{path}.")
    return lines


def _referenced_model(spec: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema a property holds directly or as list/dict items, if any."""
    for candidate in (spec, spec.get("items") or {}, spec.get("additionalProperties") or {}):
        if isinstance(candidate, dict) and "$ref" in candidate:
            model = definitions.get(str(candidate["$ref"]).rsplit("/", 1)[-1])
            if isinstance(model, dict) and "properties" in model:
                return model
    return None


def _type_text(spec: dict[str, Any], definitions: dict[str, Any]) -> str:
    if "$ref" in spec:
        return "mapping"
    if "enum" in spec:
        return " \\| ".join(f"`{value}`" for value in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    if "anyOf" in spec:
        return " or ".join(_type_text(option, definitions) for option in spec["anyOf"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(spec.get('items', {}), definitions)}"
    if kind == "object":
        return "mapping"
    return str(kind)
