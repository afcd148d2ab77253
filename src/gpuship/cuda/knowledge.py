"""Load `data/knowledge.yaml` into validated, frozen dataclasses (once per process).

The accessors in `drivers`, `gpus`, `toolkits` and `torch` read these rows; nothing else in
gpuship hard-codes a version number that belongs here (DESIGN.md).

Why no pydantic here: the file is gpuship's own packaged data, not user input, and `gpuship lint`
reaches it on its start-up path, where importing pydantic alone costs ~85 ms. A small builder
driven by the dataclass type hints does the same strict checks: unknown and missing keys, exact
types (no str/int/float coercion, a bool is not an int), `Literal` values, and the per-row domain
checks in `__post_init__`. Errors name the place in the document, e.g. `toolkits[2].version`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar, Union

from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version
from gpuship.errors import GpushipError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SCHEMA_VERSION = 5

_VARIANT_NAME = re.compile(r"^cu[0-9]{3,4}$")


class _InvalidEntry(Exception):
    """A problem at `where` (a dotted/indexed path in the document, "" for the whole of it)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where = where
        self.problem = problem


def _check_versions(row: object, *names: str) -> None:
    """Each named field, unless None, must parse as a `Version`."""
    for name in names:
        value = getattr(row, name)
        if value is not None:
            try:
                Version.parse(value)
            except InvalidVersion as exc:
                raise _InvalidEntry(name, str(exc)) from exc


def _check_source(source: str) -> None:
    """Every row says where its numbers come from (DESIGN.md), so `source` may not be empty."""
    if not source:
        raise _InvalidEntry("source", "must not be empty")


# Frozen: knowledge_base() hands the same cached objects to every caller. Keyword-only: several
# rows declare a required `source` after a defaulted field, as the YAML rows list them.
@dataclass(frozen=True, kw_only=True)
class ToolkitRow:
    """One row of NVIDIA's Table 3: a toolkit release and its minimum Linux driver."""

    version: str
    label: str
    min_driver: str
    prerelease: bool = False
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "version", "min_driver")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class FamilyRow:
    """Minor-version-compatibility floor of one CUDA major family (None: no MVC)."""

    major: int
    floor: str | None
    note: str = ""
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "floor")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class Caveat:
    """A documented limit of minor-version compatibility (e.g. PTX JIT needs the newer driver)."""

    text: str
    source: str

    def __post_init__(self) -> None:
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class MinorCompat:
    """Minor-version compatibility: the floor per CUDA major family, and its caveats."""

    families: tuple[FamilyRow, ...]
    caveats: tuple[Caveat, ...]


@dataclass(frozen=True, kw_only=True)
class ForwardCompat:
    """The cuda-compat package: which GPU brands it supports and the error it gives elsewhere."""

    brands: tuple[str, ...]
    package_prefix: str
    unsupported_error: str
    source: str

    def __post_init__(self) -> None:
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class Brands:
    """GPU brand names as NVML and nvidia-container-cli spell them."""

    names: tuple[str, ...]
    source: str

    def __post_init__(self) -> None:
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class GpuRow:
    """A GPU model: the names NVML reports for it and its compute capability."""

    name: str
    patterns: tuple[str, ...]
    compute_capability: str
    segment: Literal["datacenter", "workstation", "consumer", "integrated"]
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "compute_capability")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class ArchRow:
    """An SM target and the CUDA releases whose nvcc can compile it."""

    sm: str
    added: str | None
    seen_in: str | None = None
    removed: str | None
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "sm", "added", "seen_in", "removed")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class ArchSupport:
    """Which SM targets each CUDA release's nvcc can compile, and how far the table reaches."""

    first_release: str
    covered_through: str
    covered_through_note: str
    family_variants_since: str
    family_variants_source: str
    targets: tuple[ArchRow, ...]


@dataclass(frozen=True, kw_only=True)
class BinaryCompatRule:
    """Which GPUs SASS built for one target runs on (capabilities from `min` below `below`)."""

    code: str
    min: str
    below: str
    # `except` is a Python keyword; the builder reads the YAML key named in metadata["key"].
    except_: tuple[str, ...] = field(default=(), metadata={"key": "except"})
    also: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BinaryCompat:
    """The SASS binary-compatibility rules."""

    source: str
    rules: tuple[BinaryCompatRule, ...]

    def __post_init__(self) -> None:
        _check_source(self.source)


def _check_sourced(row: object, value: str, source: str) -> None:
    """A set `value` field needs its `source` field (`arch_list` -> `arch_list_source`)."""
    if getattr(row, value) is not None and not getattr(row, source):
        raise _InvalidEntry(source, f"required when {value} is set")


@dataclass(frozen=True, kw_only=True)
class TorchVariantRow:
    """One CUDA variant of a torch release (`cu126`): channel, arch list, CUDA runtime wheel.

    `channel` "extra": published on the index but built outside the advertised release matrix.
    """

    name: str
    channel: Literal["stable", "experimental", "extra"]
    arch_list: str | None
    arch_list_source: str | None = None
    cuda_runtime_wheel: str | None = None
    cuda_runtime_wheel_source: str | None = None
    source: str

    def __post_init__(self) -> None:
        # fullmatch: `$` alone would also accept a trailing newline.
        if not _VARIANT_NAME.fullmatch(self.name):
            raise _InvalidEntry("name", f"{self.name!r} does not match {_VARIANT_NAME.pattern}")
        _check_source(self.source)
        _check_sourced(self, "arch_list", "arch_list_source")
        _check_sourced(self, "cuda_runtime_wheel", "cuda_runtime_wheel_source")


@dataclass(frozen=True, kw_only=True)
class TorchReleaseRow:
    """A torch release, its variants, and which variant PyPI's default wheel is.

    `complete`: the variants listed are all the release has (`complete_source` shows it), so a
    variant not listed is known not to exist; otherwise it is unknown to gpuship.
    """

    version: str
    source: str
    complete: bool = False
    complete_source: str | None = None
    pypi_default: str | None
    pypi_default_source: str | None = None
    # The cuDNN major version torch's PyPI wheel of this release pins (nvidia-cudnn-cuXX).
    cudnn_major: int | None = None
    cudnn_major_source: str | None = None
    variants: tuple[TorchVariantRow, ...]

    def __post_init__(self) -> None:
        _check_versions(self, "version")
        _check_source(self.source)
        if self.complete and not self.complete_source:
            raise _InvalidEntry("complete_source", "required when complete is true")
        _check_sourced(self, "pypi_default", "pypi_default_source")
        _check_sourced(self, "cudnn_major", "cudnn_major_source")
        names = {v.name for v in self.variants}
        if self.pypi_default is not None and self.pypi_default not in names:
            raise _InvalidEntry("pypi_default", f"{self.pypi_default!r} is not one of the variants")


@dataclass(frozen=True, kw_only=True)
class RetiredVariantRow:
    """A CUDA variant torch stopped building: `last_release` is the last release that has it,
    and no later release (nor nightly) publishes it."""

    name: str
    last_release: str
    source: str

    def __post_init__(self) -> None:
        if not _VARIANT_NAME.fullmatch(self.name):
            raise _InvalidEntry("name", f"{self.name!r} does not match {_VARIANT_NAME.pattern}")
        _check_versions(self, "last_release")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class TorchData:
    """Torch releases and the download index URL pattern of their variants."""

    index_url_pattern: str
    retired_variants: tuple[RetiredVariantRow, ...] = ()
    releases: tuple[TorchReleaseRow, ...]


@dataclass(frozen=True, kw_only=True)
class ImageFlavorRow:
    """The pip-wheel libraries an nvidia/cuda flavour already holds (`cudnn`: the tag part)."""

    flavor: Literal["runtime", "devel", "cudnn"]
    libraries: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class CudaImageLibraries:
    """Which CUDA libraries each nvidia/cuda flavour ships."""

    source: str
    flavors: tuple[ImageFlavorRow, ...]

    def __post_init__(self) -> None:
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class LibraryWheelRow:
    """One CUDA library wheel torch pins, with its download size."""

    library: str
    wheel: str
    size_mb: float  # MB = 10^6 bytes, as pip reports it
    source: str

    def __post_init__(self) -> None:
        _check_source(self.source)
        if self.size_mb <= 0:
            raise _InvalidEntry("size_mb", "must be positive")


@dataclass(frozen=True, kw_only=True)
class LibraryWheelSet:
    """The CUDA library wheels of one CUDA major, as one torch release pins them."""

    cuda_major: int
    pinned_by: str
    source: str
    wheels: tuple[LibraryWheelRow, ...]

    def __post_init__(self) -> None:
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class CudaPackageRow:
    """The CUDA and cuDNN a CUDA-bound PyPI package's release series are built for.

    `cuda` "12": any CUDA 12 (as the project states it); "11.8": built with 11.8. `releases`
    are series: "1.19" is every 1.19.x."""

    package: str
    releases: tuple[str, ...]
    cuda: str
    cudnn_major: int | None = None
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "cuda")
        _check_source(self.source)
        for release in self.releases:
            if not re.fullmatch(r"[0-9]+\.[0-9]+", release):
                raise _InvalidEntry(
                    "releases", f"{release!r} is not a release series (major.minor)"
                )


@dataclass(frozen=True, kw_only=True)
class TorchBuildRow:
    """A release of a package whose binary wheels are built against one torch release."""

    package: str
    version: str
    torch: str
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "torch")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class OsPythonRow:
    """The Python 3 an OS release installs as `python3`."""

    os: str
    release: str
    python: str
    source: str

    def __post_init__(self) -> None:
        _check_versions(self, "release", "python")
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class DriverBranchRow:
    """A GPU generation and the last driver branch that supports it: the next branch drops it
    (NVIDIA's Unix graphics feature deprecation schedule)."""

    generation: str
    compute_capabilities: tuple[str, ...]
    last_branch: int
    source: str

    def __post_init__(self) -> None:
        for capability in self.compute_capabilities:
            try:
                Version.parse(capability)
            except InvalidVersion as exc:
                raise _InvalidEntry("compute_capabilities", str(exc)) from exc
        _check_source(self.source)


@dataclass(frozen=True, kw_only=True)
class KnowledgeBase:
    """The whole data file, validated."""

    schema_version: Literal[5]  # the builder's Literal check rejects any other SCHEMA_VERSION
    updated: str
    sources: dict[str, str]
    toolkits: tuple[ToolkitRow, ...]
    minor_compat: MinorCompat
    forward_compat: ForwardCompat
    brands: Brands
    gpus: tuple[GpuRow, ...]
    arch_support: ArchSupport
    binary_compat: BinaryCompat
    torch: TorchData
    cuda_image_libraries: CudaImageLibraries
    cuda_library_wheels: tuple[LibraryWheelSet, ...]
    cuda_packages: tuple[CudaPackageRow, ...]
    torch_builds: tuple[TorchBuildRow, ...]
    os_pythons: tuple[OsPythonRow, ...]
    driver_branches: tuple[DriverBranchRow, ...]


class KnowledgeBaseError(GpushipError):
    """The packaged data file is broken: a gpuship bug, not a user error."""


# --- the builder: YAML mapping -> dataclasses, checked against the resolved type hints ---

_D = TypeVar("_D", bound="DataclassInstance")


def _at(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def _describe(value: object) -> str:
    """`float 12.4`: the type matters most (YAML reads 12.4 as a float, not a version string)."""
    if value is None:
        return "null"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


@functools.cache
def _hints(cls: type) -> dict[str, typing.Any]:
    # `from __future__ import annotations` leaves strings in __annotations__; resolve them once.
    return typing.get_type_hints(cls)


def _build(cls: type[_D], data: object, where: str) -> _D:
    """Build dataclass `cls` from a YAML mapping: no unknown keys, every required key present."""
    if not isinstance(data, dict):
        raise _InvalidEntry(where, f"expected a mapping, got {_describe(data)}")
    by_key = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in by_key:
            raise _InvalidEntry(where, f"unknown key {key!r}")
    hints = _hints(cls)
    values: dict[str, object] = {}
    for key, spec in by_key.items():
        if key in data:
            values[spec.name] = _convert(hints[spec.name], data[key], _at(where, key))
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise _InvalidEntry(where, f"missing key {key!r}")
    try:
        return cls(**values)
    except _InvalidEntry as exc:  # a __post_init__ check names the field; prefix this row's path
        raise _InvalidEntry(_at(where, exc.where), exc.problem) from exc


def _convert(hint: typing.Any, value: object, where: str) -> object:
    """Check `value` against one type hint, converting lists to tuples and mappings to rows."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):  # only `X | None` occurs in the rows above
        if value is None and type(None) in args:
            return None
        (inner,) = (a for a in args if a is not type(None))
        return _convert(inner, value, where)
    if origin is Literal:
        # type() as well as ==: True == 1, but `schema_version: true` is not schema 1.
        if not any(type(value) is type(a) and value == a for a in args):
            allowed = ", ".join(repr(a) for a in args)
            raise _InvalidEntry(where, f"{_describe(value)} is not one of {allowed}")
        return value
    if origin is tuple:  # tuple[X, ...]
        if not isinstance(value, list):
            raise _InvalidEntry(where, f"expected a list, got {_describe(value)}")
        return tuple(_convert(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict:  # dict[str, X]
        if not isinstance(value, dict):
            raise _InvalidEntry(where, f"expected a mapping, got {_describe(value)}")
        for key in value:
            if not isinstance(key, str):
                raise _InvalidEntry(where, f"expected string keys, got {_describe(key)}")
        return {key: _convert(args[1], item, _at(where, key)) for key, item in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _build(hint, value, where)
    if hint in (str, int, bool, float):
        # bool is a subclass of int, so test it by exact type; YAML gives 12.4 as a float, and
        # turning that into "12.4" silently would hide a missing pair of quotes.
        if type(value) is not hint:
            raise _InvalidEntry(where, f"expected {hint.__name__}, got {_describe(value)}")
        return value
    raise TypeError(f"knowledge base builder: unsupported type hint {hint!r}")  # a gpuship bug


def parse_knowledge_base(text: str, origin: str = "knowledge.yaml") -> KnowledgeBase:
    """Validate YAML text as a knowledge base (used by the loader and by data tests).

    Raises KnowledgeBaseError, one line naming `origin` and the place in the document at fault.
    """
    import yaml  # only here: a run reads the generated knowledge_data module instead

    # The C loader (libyaml) is ~9x faster; verify's time-to-verdict budget is one second.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    prefix = f"{origin}: invalid CUDA knowledge base"
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 (safe loaders only)
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(f"{prefix}: {str(exc).splitlines()[0]}") from exc
    try:
        return _build(KnowledgeBase, data, "")
    except _InvalidEntry as exc:
        raise KnowledgeBaseError(f"{prefix}: {exc}") from exc


@functools.cache
def knowledge_base() -> KnowledgeBase:
    """The packaged knowledge base, loaded and validated once.

    From `knowledge_data.py` (the rows as Python, generated by `gpuship docs`) while it matches
    the YAML's size and CRC-32, so no run parses YAML; from the YAML itself once edited.
    """
    import zlib
    from importlib import resources  # here, not at import: it brings tempfile and random

    path = resources.files("gpuship.cuda") / "data" / "knowledge.yaml"
    data = path.read_bytes()
    from gpuship.cuda import knowledge_data

    if (len(data), zlib.crc32(data)) == (knowledge_data.YAML_SIZE, knowledge_data.YAML_CRC32):
        return knowledge_data.KNOWLEDGE_BASE
    return parse_knowledge_base(data.decode("utf-8"), str(path))
