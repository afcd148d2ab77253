"""Every stage's `gpuship.yaml` section in one root model: for loading the config, for
`gpuship schema` and for the generated config reference.

Each stage keeps its section model next to its settings (`RouteConfig` in `route/config.py`;
`VerifyConfig`, which verify, fleet and route share, in `compat/config.py`), built on
`config.section.Section`, and declares the key that holds it in `cli/stages.py`; `config/`
itself imports none of them. This module gathers them, as `rules_catalog` gathers the stages'
rules (a test fails for a section model that no key holds).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from types import GenericAlias
from typing import Any, cast

from gpuship.cli.stages import STAGES, SectionSpec
from gpuship.config.load import LoadedConfig, read_config
from gpuship.config.model import GpushipConfig, root_model
from gpuship.config.section import StageSection

# The order the schema and the config reference (both published) list the sections in, as
# they did before each stage declared its own; any other section follows, in stage order.
_PUBLISHED_ORDER = ("verify", "route", "images", "release", "inspect", "lint", "probe")


def _section(spec: SectionSpec) -> StageSection[Any]:
    module, _, name = spec.model.partition(":")
    model = getattr(importlib.import_module(module), name)
    if spec.many:  # `list[model]`, as `config.section` is asked for it (a type to pydantic)
        return StageSection(spec.key, cast(type[Any], GenericAlias(list, (model,))), list)
    return StageSection(spec.key, model)


def _order(spec: SectionSpec) -> int:
    return (
        _PUBLISHED_ORDER.index(spec.key) if spec.key in _PUBLISHED_ORDER else len(_PUBLISHED_ORDER)
    )


SECTIONS: tuple[StageSection[Any], ...] = tuple(
    _section(spec)
    for spec in sorted((stage.config for stage in STAGES if stage.config), key=_order)
)
_BY_KEY = {section.key: section for section in SECTIONS}


def section_of(config: GpushipConfig, key: str) -> Any:
    """The value of a stage's section, by its key (`section_of(config, "lint")`)."""
    return config.section(_BY_KEY[key].model)


@functools.cache
def config_model() -> type[GpushipConfig]:
    """The model a whole `gpuship.yaml` is validated against."""
    return root_model(SECTIONS)


def load_config(path: Path | None, environ: Mapping[str, str]) -> LoadedConfig:
    """Validate defaults < file < environment into one config with every stage's section."""
    return read_config(path, environ, config_model())


def config_schema() -> dict[str, object]:
    """The JSON Schema of `gpuship.yaml` (for `gpuship schema`, editors and the reference
    page), with YAML (kebab-case) key names."""
    schema = config_model().model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpuship.yaml"
    return schema
