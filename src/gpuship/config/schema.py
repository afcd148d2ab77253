"""The JSON Schema of `gpuship.yaml`, for `gpuship schema`, editors and the reference page."""

from __future__ import annotations


def config_schema() -> dict[str, object]:
    """The JSON Schema of the config file, with YAML (kebab-case) key names."""
    from gpuship.config.model import GpushipConfig

    schema = GpushipConfig.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpuship.yaml"
    return schema
