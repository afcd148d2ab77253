"""Plan the matrix cells of one image: values, id, needs, base pin, args, tags and labels.

Pure: the lock content, targets and source facts come in as data. Config mistakes that make
every cell wrong (an unknown name in a template, a cycle between include values, a reserved
axis name) raise ConfigError naming the image and field; a combination that is wrong on its
own (no torch wheel for that CUDA, an SM the release cannot compile, a base not in the lock)
is returned as an `InvalidCombination` so the caller can fail or, with --drop-invalid, note it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuship import labels as L
from gpuship.cuda.arch import ArchTarget
from gpuship.errors import ConfigError, InputError
from gpuship.limits import DEFAULT_LIMITS
from gpuship.matrix.config import CacheConfig, ImageConfig, axis_text
from gpuship.matrix.expand import ExpansionError, expand
from gpuship.matrix.needs import GpuNeeds, InvalidCell, gpu_needs
from gpuship.matrix.result import MatrixEntry
from gpuship.matrix.template import Template, TemplateError, parse_template, resolve_values
from gpuship.reference import parse_reference, parse_repository
from gpuship.report.result import to_json

BASE_IMAGE_ARG = "BASE_IMAGE"
# Values every template may use besides the cell's own; set from the knowledge base.
BUILTINS = ("image", "min_driver", "arch_list", "torch_variant", "torch_index_url")
# Keys of a matrix cell in JSON; an axis may not take one of these names (cuda/torch may:
# they mean the same thing in both places).
RESERVED = frozenset(
    {
        "id", "image", "role", "vars", "repository", "tags", "labels", "build_args",
        "cache_from", "cache_to", "base_image", "min_driver", "arch_list", "torch_variant",
        "torch_index_url", "dockerfile", "context", "target", "platforms", "config_digest",
    }
)  # fmt: skip
MAX_CELL_ID = 80
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


@dataclass(frozen=True)
class SourceFacts:
    """Where the build comes from, for OCI labels (from the GitHub environment when set), and
    the fleet-wide driver floor it is built for (`verify.driver-floor.default`)."""

    source_url: str | None = None
    revision: str | None = None
    driver_floor: str | None = None


@dataclass(frozen=True)
class Cell:
    """One buildable matrix cell; `to_json` is its matrix entry."""

    id: str
    image: str
    role: str
    values: Mapping[str, str]
    needs: GpuNeeds
    repository: str
    tags: tuple[str, ...]
    build_args: Mapping[str, str]
    labels: Mapping[str, str]
    base_image: str | None
    dockerfile: str
    context: str
    target: str | None
    platforms: tuple[str, ...]
    config_digest: str
    cache_from: str | None = None
    cache_to: str | None = None

    def entry(self) -> MatrixEntry:
        """The matrix entry: axis values at the top (for `matrix.<axis>`) and everything else."""
        return MatrixEntry(
            id=self.id,
            image=self.image,
            role=self.role,
            axes=self.values,
            vars=dict(self.values),
            cuda=self.needs.cuda,
            torch=self.needs.torch,
            min_driver=self.needs.min_driver,
            arch_list=self.needs.arch_list,
            torch_variant=self.needs.torch_variant,
            repository=self.repository,
            tags=self.tags,
            build_args=self.build_args,
            labels=self.labels,
            cache_from=self.cache_from,
            cache_to=self.cache_to,
            base_image=self.base_image,
            dockerfile=self.dockerfile,
            context=self.context,
            target=self.target,
            platforms=self.platforms,
            config_digest=self.config_digest,
        )

    def to_json(self) -> dict[str, Any]:
        """The matrix entry as JSON (what `gpuship build --cell` reads back)."""
        value: dict[str, Any] = to_json(self.entry())
        return value


@dataclass(frozen=True)
class InvalidCombination:
    """A combination left out of the matrix, and why."""

    image: str
    cell_id: str
    reason: str
    values: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ImagePlan:
    """The cells of one image and the combinations that were not valid."""

    cells: list[Cell] = field(default_factory=list)
    invalid: list[InvalidCombination] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Templates:
    repository: Template
    base_image: Template | None
    cell_id: Template | None
    tags: tuple[Template, ...]
    build_args: Mapping[str, Template]
    labels: Mapping[str, Template]


def plan_image(
    image: ImageConfig,
    targets: tuple[ArchTarget, ...],
    lock: Mapping[str, str] | None,
    source: SourceFacts = SourceFacts(),
    max_cells: int = DEFAULT_LIMITS.matrix_max_cells,
) -> ImagePlan:
    """All cells of `image`. `lock` None plans without pinning bases (used by `gpuship lock`)."""
    templates = _check_image(image)
    config_json = image.model_dump(mode="json", by_alias=True)
    plan = ImagePlan()
    seen: dict[str, Mapping[str, str]] = {}
    for values, from_include in _combination_values(image, max_cells):
        cell_id = _cell_id(image, templates, values, from_include)
        if cell_id in seen:
            if seen[cell_id] == values:
                continue  # the same combination twice (e.g. a repeated include entry)
            raise ConfigError(
                f"images[{image.name}]: two different cells get the id '{cell_id}'; "
                "set cell-id to a template that tells them apart"
            )
        seen[cell_id] = values
        try:
            cell = _plan_cell(image, templates, targets, lock, source, config_json, values, cell_id)
        except InvalidCell as exc:
            plan.invalid.append(InvalidCombination(image.name, cell_id, str(exc), values))
            continue
        plan.notes.extend(f"{cell_id}: {note}" for note in cell.needs.notes)
        plan.cells.append(cell)
    return plan


def base_references(
    image: ImageConfig,
    targets: tuple[ArchTarget, ...],
    max_cells: int = DEFAULT_LIMITS.matrix_max_cells,
) -> list[str]:
    """Every distinct base image tag the combinations of `image` use (for `gpuship lock`).

    Combinations the knowledge base rules out still get their base locked: validity is the
    matrix's verdict, and the lock must not change when a version becomes known.
    """
    templates = _check_image(image)
    if templates.base_image is None:
        return []
    references: set[str] = set()
    for values, _ in _combination_values(image, max_cells):
        try:
            needs = gpu_needs(values.get("cuda"), values.get("torch"), targets, image.allow_unknown)
        except InvalidCell:
            needs = GpuNeeds()
        try:
            reference, _, digest = _pin_base(
                templates.base_image, _context(image, values, needs), None
            )
        except InvalidCell:
            continue  # a base that does not render for this combination is the matrix's error
        if reference is not None and digest is None:
            references.add(reference)
    return sorted(references)


def _combination_values(image: ImageConfig, max_cells: int) -> list[tuple[dict[str, str], bool]]:
    """(resolved values, created by an include entry) of every combination."""
    try:
        combinations = expand(
            {axis: [axis_text(v) for v in values] for axis, values in image.axes.items()},
            [{k: axis_text(v) for k, v in entry.items()} for entry in image.include],
            [{k: axis_text(v) for k, v in entry.items()} for entry in image.exclude],
            max_cells,
        )
    except ExpansionError as exc:
        raise ConfigError(f"images[{image.name}]: {exc}") from None
    resolved = []
    for combination in combinations:
        try:
            values = resolve_values({"image": image.name, **combination.values})
        except TemplateError as exc:
            raise ConfigError(f"images[{image.name}].include: {exc}") from None
        del values["image"]
        resolved.append((values, combination.from_include))
    return resolved


def _context(image: ImageConfig, values: Mapping[str, str], needs: GpuNeeds) -> dict[str, str]:
    """The values templates see: the cell's own plus the built-ins that are known."""
    builtins = {
        "image": image.name,
        "min_driver": needs.min_driver,
        "arch_list": needs.arch_list,
        "torch_variant": needs.torch_variant,
        "torch_index_url": needs.torch_index_url,
    }
    return {**values, **{k: v for k, v in builtins.items() if v is not None}}


def _check_image(image: ImageConfig) -> _Templates:
    """Parse every template once and check every name it uses exists."""
    where = f"images[{image.name}]"
    for axis in image.axes:
        if axis in RESERVED:
            raise ConfigError(f"{where}.axes: '{axis}' is a reserved cell key; rename the axis")
    include_keys = {key for entry in image.include for key in entry}
    for key in sorted(include_keys & RESERVED):
        raise ConfigError(f"{where}.include: '{key}' is a reserved cell key; rename it")
    value_names = set(image.axes) | include_keys
    known = value_names | set(BUILTINS)
    for index, entry in enumerate(image.include):
        for key, value in entry.items():
            _template(f"{where}.include[{index}].{key}", axis_text(value), value_names | {"image"})
    if image.base_image is not None and BASE_IMAGE_ARG in image.build_args:
        raise ConfigError(
            f"{where}.build-args: {BASE_IMAGE_ARG} is set from base-image (pinned by the lock); "
            "remove one of them"
        )
    for name in image.labels:
        if name.startswith("io.gpuship."):
            raise ConfigError(f"{where}.labels: '{name}' is written by gpuship; remove it")
    return _Templates(
        repository=_template(f"{where}.repository", image.repository, known),
        base_image=_template(f"{where}.base-image", image.base_image, known)
        if image.base_image is not None
        else None,
        cell_id=_template(f"{where}.cell-id", image.cell_id, known)
        if image.cell_id is not None
        else None,
        tags=tuple(_template(f"{where}.tags[{i}]", tag, known) for i, tag in enumerate(image.tags)),
        build_args={
            name: _template(f"{where}.build-args.{name}", text, known)
            for name, text in image.build_args.items()
        },
        labels={
            name: _template(f"{where}.labels.{name}", text, known)
            for name, text in image.labels.items()
        },
    )


def _template(where: str, text: str, known: set[str]) -> Template:
    try:
        template = parse_template(text)
    except TemplateError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    unknown = sorted(template.names - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown axis '{unknown[0]}' in template '{text}' "
            f"(known: {', '.join(sorted(known))})"
        )
    return template


def _sanitise(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")


def _cell_id(
    image: ImageConfig, templates: _Templates, values: Mapping[str, str], from_include: bool
) -> str:
    """The cell-id template, or the image name and the axis values (every value of a cell
    an include entry created, since it may share its axis values with another one)."""
    if templates.cell_id is not None:
        raw = _render(templates.cell_id, {"image": image.name, **values}, "cell-id")
    else:
        keys = [axis for axis in image.axes if axis in values]
        if from_include or not keys:
            keys = list(values)
        raw = "-".join([image.name, *(f"{key}{values[key]}" for key in keys)])
    cell_id = _sanitise(raw)
    if len(cell_id) > MAX_CELL_ID:
        # Tags are limited to 128 characters and carry `sha-<commit>-` too.
        digest = hashlib.sha256(cell_id.encode()).hexdigest()[:8]
        cell_id = f"{cell_id[: MAX_CELL_ID - 9]}-{digest}"
    return cell_id


def _render(template: Template, values: Mapping[str, str], what: str) -> str:
    try:
        return template.render(values)
    except TemplateError as exc:
        raise InvalidCell(f"{what}: {exc}") from None


def _plan_cell(
    image: ImageConfig,
    templates: _Templates,
    targets: tuple[ArchTarget, ...],
    lock: Mapping[str, str] | None,
    source: SourceFacts,
    config_json: Mapping[str, Any],
    values: Mapping[str, str],
    cell_id: str,
) -> Cell:
    needs = gpu_needs(values.get("cuda"), values.get("torch"), targets, image.allow_unknown)
    context = _context(image, values, needs)
    repository = _repository(_render(templates.repository, context, "repository"))
    base_image, base_name, base_digest = _pin_base(templates.base_image, context, lock)
    build_args = {
        name: _render(t, context, f"build-args.{name}") for name, t in templates.build_args.items()
    }
    if base_image is not None:
        build_args[BASE_IMAGE_ARG] = base_image
    tags = []
    for template in templates.tags:
        tag = _render(template, context, "tags")
        if not _TAG.fullmatch(tag):
            raise InvalidCell(f"tag '{tag}' (from '{template.text}') is not a valid image tag")
        tags.append(f"{repository}:{tag}")
    digest_input = json.dumps({"image": config_json, "values": values}, sort_keys=True)
    config_digest = "sha256:" + hashlib.sha256(digest_input.encode()).hexdigest()
    label_values = {
        L.OCI_TITLE: image.name,
        L.OCI_SOURCE: source.source_url,
        L.OCI_REVISION: source.revision,
        L.OCI_BASE_NAME: base_name,
        L.OCI_BASE_DIGEST: base_digest,
        L.LABEL_CELL: cell_id,
        L.LABEL_ROLE: image.role,
        L.LABEL_CUDA: needs.cuda,
        L.LABEL_MIN_DRIVER: needs.min_driver,
        L.LABEL_ARCH_LIST: needs.arch_list,
        L.LABEL_TORCH: needs.torch,
        L.LABEL_CONFIG_DIGEST: config_digest,
        L.LABEL_DRIVER_FLOOR: source.driver_floor,
    }
    cell_labels = {name: value for name, value in label_values.items() if value is not None}
    for name, template in templates.labels.items():
        cell_labels[name] = _render(template, context, f"labels.{name}")
    return Cell(
        id=cell_id,
        image=image.name,
        role=image.role,
        values=dict(values),
        needs=needs,
        repository=repository,
        tags=tuple(tags),
        build_args=build_args,
        labels=cell_labels,
        base_image=base_image,
        dockerfile=image.dockerfile,
        context=image.context,
        target=image.target,
        platforms=tuple(image.platforms),
        config_digest=config_digest,
        **_cache(image.cache, repository, cell_id),
    )


def _cache(cache: CacheConfig, repository: str, cell_id: str) -> dict[str, str | None]:
    """BuildKit's --cache-from/--cache-to for a cell. Registry cache: OCI image manifests
    (`image-manifest=true,oci-mediatypes=true`, which ECR needs; BuildKit >= 0.21 defaults to
    them) in the cache repository, one tag per cell (docs.docker.com/build/cache/backends/
    registry); GitHub Actions cache: one scope per cell (.../backends/gha). A cache that cannot
    be written never fails the build (`ignore-error=true`); BuildKit logs it."""
    if cache.backend == "none":
        return {"cache_from": None, "cache_to": None}
    if cache.backend == "gha":
        source = f"type=gha,scope={cell_id}"
    else:
        cache_repository = _repository(cache.repository or f"{repository}-buildcache")
        source = f"type=registry,ref={cache_repository}:{cell_id}"
    extra = ",image-manifest=true,oci-mediatypes=true" if cache.backend == "registry" else ""
    return {
        "cache_from": source,
        "cache_to": f"{source},mode={cache.mode}{extra},ignore-error=true",
    }


def _repository(text: str) -> str:
    try:
        return str(parse_repository(text))
    except InputError as exc:
        raise InvalidCell(f"repository: {exc}") from None


def _pin_base(
    template: Template | None, context: Mapping[str, str], lock: Mapping[str, str] | None
) -> tuple[str | None, str | None, str | None]:
    """(reference to build from, its name, its digest); the digest comes from the lock."""
    if template is None:
        return None, None, None
    try:
        reference = parse_reference(_render(template, context, "base-image"))
    except InputError as exc:
        raise InvalidCell(f"base-image: {exc}") from None
    if reference.digest is not None:
        return str(reference), str(reference), reference.digest
    name = str(reference)
    if lock is None:
        return name, name, None
    digest = lock.get(name)
    if digest is None:
        raise InvalidCell(f"base image {name} is not in gpuship.lock (run 'gpuship lock')")
    return str(reference.with_digest(digest)), name, digest
