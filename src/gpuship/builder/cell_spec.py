"""A matrix cell as `gpuship build --cell` receives it (the JSON of one `include` entry).

In a workflow the build job passes `${{ toJSON(matrix) }}` through an environment variable;
the keys `gpuship matrix` writes are validated here, extra keys (axis values) are kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuship.compat.needs import labelled_needs
from gpuship.documents import load_json
from gpuship.errors import InputError
from gpuship.limits import DEFAULT_LIMITS, Limits


class CellSpec(BaseModel):
    """The part of a matrix cell a build needs."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=100)
    image: str
    repository: str
    tags: list[str] = Field(default_factory=list)
    build_args: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    # BuildKit cache options (`gpuship matrix` fills them from `images[].cache`); none: no cache
    cache_from: str | None = None
    cache_to: str | None = None
    dockerfile: str = "Dockerfile"
    context: str = "."
    target: str | None = None
    platforms: list[str] = Field(default_factory=list)
    cuda: str | None = None
    min_driver: str | None = None
    arch_list: str | None = None


def parse_cell(text: str, limits: Limits = DEFAULT_LIMITS) -> CellSpec:
    """Validate `--cell` JSON; InputError naming the first bad key."""
    return cell_from_dict(load_json(text, "--cell", limits))


def cell_from_dict(data: Any) -> CellSpec:
    """Validate a decoded cell; InputError naming the first bad key, or a needs label that
    `verify` and `inspect` would refuse on the built image (refused before anything is built)."""
    try:
        cell = CellSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise InputError(f"--cell: {where}: {first['msg']}") from None
    labelled_needs(f"--cell: cell {cell.id}", cell.labels)
    return cell
