"""The `images:` section of `gpuship.yaml`: what to build, over which axes, and how to tag it.

Example (see workflows-examples/sample-project/gpuship.yaml)::

    images:
      - name: train
        role: training
        dockerfile: Dockerfile
        repository: ghcr.io/acme/train
        base-image: "ghcr.io/acme/cuda-base:{cuda}-runtime"
        axes:
          cuda: ["12.4", "12.6"]
          python: ["3.11", "3.12"]
        exclude:
          - {cuda: "12.4", python: "3.12"}
        include:
          - {cuda: "12.6", torch: "2.6.0"}
        build-args:
          PYTHON_VERSION: "{python}"
        tags: ["cu{cuda|nodot}-py{python}"]
        targets: [sm_80, sm_90]

Template syntax: `gpuship.matrix.template`. Only pydantic and the standard library are imported
here (config sections must not import stage code).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from gpuship.config.section import Section

# Axis and include values are strings. YAML reads `3.10` as the float 3.1, the classic matrix
# bug, so floats are refused with a hint instead of being turned into the wrong version.
AxisValue = str | int | bool

_IMAGE_NAME = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

Role = Literal["training", "inference", "data-prep", "other"]


def axis_text(value: AxisValue) -> str:
    """The string a YAML scalar stands for in a matrix (`true` -> "true", 12 -> "12")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _refuse_floats(value: object, where: str) -> None:
    if isinstance(value, float):
        raise ValueError(
            f'{where}: {value!r} is a YAML number; quote versions (write "{value}" or '
            f'"3.10"), because YAML reads 3.10 as 3.1'
        )


class CacheConfig(Section):
    """Where BuildKit keeps each cell's build cache (buildx builds; the engine builder reuses
    its own local cache). Never in the release repository: cache manifests there would sit
    beside release tags, count against retention and trip tag-immutability settings."""

    backend: Literal["registry", "gha", "none"] = Field(
        default="registry",
        description=(
            "registry: a cache image per cell in `repository`; gha: the GitHub Actions cache "
            "(needs ACTIONS_CACHE_URL and ACTIONS_RUNTIME_TOKEN in the step); none: no cache."
        ),
    )
    repository: str | None = Field(
        default=None,
        description="Repository of the registry cache; default: the image's repository + "
        "'-buildcache'. Each cell is a tag named after its id.",
    )
    mode: Literal["min", "max"] = Field(
        default="max", description="max caches every stage's layers; min the final stage's only."
    )


class ImageConfig(Section):
    """One image to build, expanded over its axes into matrix cells."""

    name: str = Field(description="Image name; the first part of every cell id.")
    role: Role = Field(
        default="other", description="What the image is for (label io.gpuship.role)."
    )
    dockerfile: str = Field(default="Dockerfile", description="Dockerfile, relative to the config.")
    context: str = Field(default=".", description="Build context, relative to the config file.")
    target: str | None = Field(default=None, description="Build stage to stop at.")
    repository: str = Field(description="Repository the cells are pushed to (template).")
    axes: dict[str, list[AxisValue]] = Field(
        default_factory=dict, description="Axis name -> values; cells are their product."
    )
    include: list[dict[str, AxisValue]] = Field(
        default_factory=list, description="GitHub `matrix.include` semantics."
    )
    exclude: list[dict[str, AxisValue]] = Field(
        default_factory=list, description="GitHub `matrix.exclude` semantics (partial match)."
    )
    build_args: dict[str, str] = Field(default_factory=dict, description="Build args (templates).")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels (templates).")
    tags: list[str] = Field(
        default_factory=list, description="Tags pushed besides the candidate tag (templates)."
    )
    base_image: str | None = Field(
        default=None,
        description="Base image (template); pinned through gpuship.lock, passed as BASE_IMAGE.",
    )
    cell_id: str | None = Field(
        default=None, description="Cell id template; default image name + axis values."
    )
    targets: list[str] | str | None = Field(
        default=None,
        description="GPU targets (`[sm_80, sm_90]`), or the path of a fleet file listing GPUs.",
    )
    platforms: list[str] = Field(default_factory=lambda: ["linux/amd64"])
    cache: CacheConfig = Field(default_factory=CacheConfig)
    allow_unknown: bool = Field(
        default=False,
        description="Accept CUDA/torch versions the knowledge base does not know (no labels).",
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _IMAGE_NAME.fullmatch(value):
            raise ValueError(f"image name '{value}' must be lowercase letters, digits, '.-_'")
        return value

    @field_validator("axes", mode="before")
    @classmethod
    def _check_axes(cls, value: object) -> object:
        if isinstance(value, dict):
            for axis, values in value.items():
                if not _AXIS_NAME.fullmatch(str(axis)):
                    raise ValueError(f"axis name '{axis}' must be letters, digits, '_' or '-'")
                if isinstance(values, list):
                    if not values:
                        raise ValueError(f"axis '{axis}' has no values")
                    for item in values:
                        _refuse_floats(item, f"axis '{axis}'")
        return value

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _check_entries(cls, value: object) -> object:
        if isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict):
                    for key, item in entry.items():
                        _refuse_floats(item, f"key '{key}'")
        return value
