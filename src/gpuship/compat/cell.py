"""A `gpuship matrix` cell as every later command reads it: `build --cell` (one `include`
entry), and `route --matrix`, `fleet --matrix` and the image map (the whole matrix).

In a workflow the build job passes `${{ toJSON(matrix) }}` through an environment variable,
and route and fleet read the matrix file a job wrote: outside input either way. The keys
`gpuship matrix` writes are validated here, once, for every reader (extra keys, the axis
values, are kept); an error names the document and the field (`include[3].labels`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.documents import load_json, read_json
from gpuship.errors import InputError
from gpuship.labels import LABEL_ARCH_LIST, LABEL_CELL, LABEL_CUDA, LABEL_MIN_DRIVER
from gpuship.limits import DEFAULT_LIMITS, Limits

# A cell id: a runner label, a tag suffix, a file name and a YAML comment in later output.
CELL_ID = r"^[a-z0-9][a-z0-9._-]*$"
MAX_CELL_ID = 100


class CellSpec(BaseModel):
    """The part of a matrix cell the later commands read."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(pattern=CELL_ID, max_length=MAX_CELL_ID)
    image: str
    repository: str
    tags: list[str] = Field(default_factory=list)
    digest: str | None = None  # a built cell routed by digest instead of its tags
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

    @field_validator("labels")
    @classmethod
    def _cell_label_is_an_id(cls, labels: dict[str, str]) -> dict[str, str]:
        _checked_cell_label(labels)
        return labels

    @property
    def name(self) -> str:
        """The name route and fleet show the cell by: its io.gpuship.cell label, else its id."""
        return self.labels.get(LABEL_CELL) or self.id


def _checked_cell_label(labels: Mapping[str, str]) -> str | None:
    """The io.gpuship.cell label when set; ValueError when it is not a cell id."""
    text = labels.get(LABEL_CELL)
    if text and (len(text) > MAX_CELL_ID or not re.fullmatch(CELL_ID, text)):
        raise ValueError(f"label {LABEL_CELL}={text[:120]!r} is not a cell id ({CELL_ID})")
    return text or None


def image_cell_id(labels: Mapping[str, str], where: str) -> str | None:
    """An image's io.gpuship.cell label (read from a registry: outside input), checked as
    the cell id it stands for; InputError naming `where` (the image) when it is not one."""
    try:
        return _checked_cell_label(labels)
    except ValueError as error:
        raise InputError(f"{where}: {error}") from None


def parse_cell(text: str, limits: Limits = DEFAULT_LIMITS) -> CellSpec:
    """Validate `--cell` JSON; InputError naming the first bad key."""
    return cell_from_dict(load_json(text, "--cell", limits))


def cell_from_dict(data: Any, where: str = "--cell", at: str = "") -> CellSpec:
    """Validate a decoded cell; InputError naming `where`, the cell's place `at` and the first
    bad key, or a needs label that `verify` and `inspect` would refuse on the built image
    (refused before anything is built or routed)."""
    try:
        cell = CellSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = at + "".join(_place(part) for part in first["loc"])
        raise InputError(f"{where}: {field.lstrip('.') or '(top level)'}: {first['msg']}") from None
    image_needs(f"{where}: cell {cell.id}", {}, _needs_labels(cell))
    return cell


def _place(part: int | str) -> str:
    """A step of a field's location: `[2]`, `.labels`, or a key quoted and escaped when it
    holds a character that would break the one-line message (`['a\\nb']`)."""
    if isinstance(part, int):
        return f"[{part}]"
    return f".{part}" if part.isprintable() else f"[{part!r}]"


def matrix_cells(matrix: object, where: str) -> list[CellSpec]:
    """The cells of a `gpuship matrix` document (`{"include": [...]}`), each validated."""
    cells = matrix.get("include") if isinstance(matrix, dict) else None
    if not isinstance(cells, list):
        raise InputError(f"{where}: not a gpuship matrix: no 'include' list")
    return [cell_from_dict(cell, where, f"include[{i}]") for i, cell in enumerate(cells)]


def read_matrix(path: Path, limits: Limits) -> list[CellSpec]:
    """A matrix file's cells, read within the limits for local JSON documents."""
    return matrix_cells(read_json(path, "matrix", limits), str(path))


def cell_needs(cell: CellSpec) -> ImageGpuNeeds:
    """What the cell's image will need from a GPU host: its labels, and the needs `gpuship
    matrix` planned for it (the labels the build writes from them)."""
    return image_needs(cell.name, {}, _needs_labels(cell))


def _needs_labels(cell: CellSpec) -> dict[str, str]:
    labels = dict(cell.labels)
    planned = (
        (LABEL_CUDA, cell.cuda),
        (LABEL_MIN_DRIVER, cell.min_driver),
        (LABEL_ARCH_LIST, cell.arch_list),
    )
    labels.update({label: value for label, value in planned if value})
    return labels
