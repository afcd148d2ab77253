"""Every stage's `gpuship.yaml` section in one root model: for loading the config, for
`gpuship schema` and for the generated config reference.

Each stage keeps its section model next to its settings (`RouteConfig` in `route/config.py`;
`VerifyConfig`, which verify, fleet and route share, in `compat/config.py`), built on
`config.section.Section`; `config/` itself imports none of them.
This module only names the key each one is read from and gathers them, as `rules_catalog`
gathers the stages' rules. A new stage adds its model to `SECTIONS` (a test fails for a
section model that no key holds).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuship.compat.config import VerifyConfig
from gpuship.config.load import LoadedConfig, read_config
from gpuship.config.model import GpushipConfig, root_model
from gpuship.config.section import StageSection
from gpuship.image.config import ImageStageConfig
from gpuship.lint.config import LintConfig
from gpuship.matrix.config import ImageConfig
from gpuship.probe.config import ProbeConfig
from gpuship.release.config import ReleaseConfig
from gpuship.route.config import RouteConfig

# In the order the schema and the config reference list them.
SECTIONS: tuple[StageSection[Any], ...] = (
    StageSection("verify", VerifyConfig),
    StageSection("route", RouteConfig),
    StageSection("images", list[ImageConfig], list),
    StageSection("release", ReleaseConfig),
    # Named after the command: `image:` beside `images:` would hide a typo in either.
    StageSection("inspect", ImageStageConfig),
    StageSection("lint", LintConfig),
    StageSection("probe", ProbeConfig),
)


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
