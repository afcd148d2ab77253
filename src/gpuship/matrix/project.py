"""Where a build project lives and how its `images:` become plans (shared by the commands).

Paths in `images:` (dockerfile, context, fleet file) and `gpuship.lock` are relative to the
directory of `gpuship.yaml`, or to the working directory when no config file was found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuship.errors import ConfigError, LimitExceeded, UsageError
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.matrix.cells import ImagePlan, SourceFacts, plan_image
from gpuship.matrix.config import ImageConfig
from gpuship.matrix.expand import combination_count
from gpuship.matrix.lockfile import LOCK_FILE_NAME, read_lock
from gpuship.matrix.targets import image_targets


@dataclass(frozen=True)
class Project:
    """The images to build, the project directory and the lock file path."""

    images: tuple[ImageConfig, ...]
    directory: Path
    lock_path: Path
    limits: Limits = DEFAULT_LIMITS


def load_project(
    config_path: Path | None,
    images: Sequence[ImageConfig],
    lock_path: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Project:
    """The project declared by `images:` of the config file at `config_path` (None: no file,
    paths relative to the working directory); ConfigError when it declares no images."""
    directory = config_path.parent if config_path else Path.cwd()
    if not images:
        where = config_path or "gpuship.yaml"
        raise ConfigError(f"{where}: no 'images:' declared; nothing to expand or build")
    lock = Path(lock_path) if lock_path else directory / LOCK_FILE_NAME
    return Project(images=tuple(images), directory=directory, lock_path=lock, limits=limits)


def select_images(project: Project, names: Sequence[str]) -> list[ImageConfig]:
    """The images named (all when `names` is empty); ConfigError for an unknown name."""
    if not names:
        return list(project.images)
    by_name = {image.name: image for image in project.images}
    for name in names:
        if name not in by_name:
            raise ConfigError(f"no image named '{name}' (images: {', '.join(by_name)})")
    return [by_name[name] for name in names]


def pick_cell(
    project: Project, image: str, wanted: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, Any]:
    """The one valid cell of `image` whose values match every `wanted` axis value (`build
    --image --set`), as `gpuship matrix` writes it; ConfigError when no valid cell matches
    (naming the invalid one that does, and why), UsageError when several do."""
    (plan,) = plan_images(project, select_images(project, [image]), environ)
    chosen = [c for c in plan.cells if all(c.values.get(k) == v for k, v in wanted.items())]
    if len(chosen) == 1:
        return chosen[0].to_json()
    if not chosen:
        rejected = [c for c in plan.invalid if all(c.values.get(k) == v for k, v in wanted.items())]
        why = f" ({rejected[0].cell_id} is invalid: {rejected[0].reason})" if rejected else ""
        raise ConfigError(f"image {image} has no valid cell with {_pairs(wanted)}{why}")
    ids = ", ".join(c.id for c in chosen)
    raise UsageError(
        f"{_pairs(wanted) or 'no --set'} matches {len(chosen)} cells ({ids}); add --set"
    )


def _pairs(wanted: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in wanted.items())


def source_facts(environ: Mapping[str, str]) -> SourceFacts:
    """OCI source and revision from the GitHub Actions environment, when present."""
    server = environ.get("GITHUB_SERVER_URL", "https://github.com")
    repository = environ.get("GITHUB_REPOSITORY")
    return SourceFacts(
        source_url=f"{server}/{repository}" if repository else None,
        revision=environ.get("GITHUB_SHA") or None,
    )


def plan_images(
    project: Project,
    images: Sequence[ImageConfig],
    environ: Mapping[str, str],
    driver_floor: str | None = None,
) -> list[ImagePlan]:
    """Plan every image against the lock file (a missing lock pins nothing); `driver_floor`
    (the fleet-wide `verify.driver-floor`) is stamped into each cell's labels.

    The size of the whole matrix is checked against `limits.matrix-max-cells` first, from the
    axis lengths alone, so a matrix of a million cells is refused before one is made.
    """
    check_matrix_size(images, project.limits)
    lock = read_lock(project.lock_path, project.limits)
    bases = dict(lock.bases) if lock else {}
    facts = replace(source_facts(environ), driver_floor=driver_floor)
    limit = project.limits.matrix_max_cells
    return [
        plan_image(
            image, image_targets(image, project.directory, project.limits), bases, facts, limit
        )
        for image in images
    ]


def check_matrix_size(images: Sequence[ImageConfig], limits: Limits) -> None:
    """LimitExceeded when the images' axes and include entries could make too many cells."""
    counts = {image.name: combination_count(image.axes, image.include) for image in images}
    total = sum(counts.values())
    if total > limits.matrix_max_cells:
        largest = max(counts, key=lambda name: counts[name])
        raise LimitExceeded(
            f"images[{largest}]",
            f"the selected images' axes and include entries make up to {total} cells "
            f"({counts[largest]} from this image)",
            Limits.key("matrix_max_cells"),
            limits.matrix_max_cells,
        )


@dataclass(frozen=True)
class MatrixOverrides:
    """Command-line changes to the selected images' matrix (`--axis`, `--include`, `--exclude`)."""

    axes: Mapping[str, Sequence[str]]
    include: Sequence[Mapping[str, Any]] = ()
    exclude: Sequence[Mapping[str, Any]] = ()


def apply_overrides(images: Sequence[ImageConfig], overrides: MatrixOverrides) -> list[ImageConfig]:
    """Replace axis values and add include/exclude entries; UsageError when one fits nothing.

    An axis override applies to every selected image that declares the axis (e.g. only the
    CUDA branches a pull request touches); naming an axis no selected image has is an error.
    """
    for axis in overrides.axes:
        if not any(axis in image.axes for image in images):
            raise UsageError(f"--axis {axis}: no selected image has an axis '{axis}'")
    changed: list[ImageConfig] = []
    for image in images:
        data = image.model_dump(by_alias=True, exclude_unset=True)
        axes = dict(image.axes)
        axes.update({k: list(v) for k, v in overrides.axes.items() if k in image.axes})
        data["axes"] = axes
        data["include"] = [*image.include, *overrides.include]
        data["exclude"] = [*image.exclude, *overrides.exclude]
        try:
            changed.append(ImageConfig.model_validate(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise UsageError(f"images[{image.name}].{where}: {first['msg']}") from None
    return changed
