"""Load `data/knowledge.yaml` into validated, frozen models (once per process).

The accessors in `drivers`, `gpus`, `toolkits` and `torch` read these models; nothing else in
gpuship hard-codes a version number that belongs here (DESIGN.md).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version
from gpuship.errors import GpushipError

SCHEMA_VERSION = 1


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_version(value: str | None) -> str | None:
    if value is not None:
        try:
            Version.parse(value)
        except InvalidVersion as exc:
            raise ValueError(str(exc)) from exc
    return value


class ToolkitRow(_Row):
    """One row of NVIDIA's Table 3: a toolkit release and its minimum Linux driver."""

    version: str
    label: str
    min_driver: str
    prerelease: bool = False
    source: str = Field(min_length=1)

    _versions = field_validator("version", "min_driver")(_check_version)


class FamilyRow(_Row):
    """Minor-version-compatibility floor of one CUDA major family (None: no MVC)."""

    major: int
    floor: str | None
    note: str = ""
    source: str = Field(min_length=1)

    _versions = field_validator("floor")(_check_version)


class Caveat(_Row):
    text: str
    source: str = Field(min_length=1)


class MinorCompat(_Row):
    families: tuple[FamilyRow, ...]
    caveats: tuple[Caveat, ...]


class ForwardCompat(_Row):
    brands: tuple[str, ...]
    package_prefix: str
    unsupported_error: str
    source: str = Field(min_length=1)


class Brands(_Row):
    names: tuple[str, ...]
    source: str = Field(min_length=1)


class GpuRow(_Row):
    name: str
    patterns: tuple[str, ...]
    compute_capability: str
    segment: Literal["datacenter", "workstation", "consumer", "integrated"]
    source: str = Field(min_length=1)

    _versions = field_validator("compute_capability")(_check_version)


class ArchRow(_Row):
    """An SM target and the CUDA releases whose nvcc can compile it."""

    sm: str
    added: str | None
    seen_in: str | None = None
    removed: str | None
    source: str = Field(min_length=1)

    _versions = field_validator("sm", "added", "seen_in", "removed")(_check_version)


class ArchSupport(_Row):
    first_release: str
    covered_through: str
    covered_through_note: str
    family_variants_since: str
    family_variants_source: str
    targets: tuple[ArchRow, ...]


class BinaryCompatRule(_Row):
    code: str
    min: str
    below: str
    except_: tuple[str, ...] = Field(default=(), alias="except")
    also: tuple[str, ...] = ()


class BinaryCompat(_Row):
    source: str = Field(min_length=1)
    rules: tuple[BinaryCompatRule, ...]


class TorchVariantRow(_Row):
    name: str = Field(pattern=r"^cu[0-9]{3,4}$")
    channel: Literal["stable", "experimental"]
    arch_list: str | None
    cuda_runtime_wheel: str | None = None
    cuda_runtime_wheel_source: str | None = None
    source: str = Field(min_length=1)


class TorchReleaseRow(_Row):
    version: str
    source: str = Field(min_length=1)
    pypi_default: str | None
    pypi_default_source: str | None = None
    variants: tuple[TorchVariantRow, ...]

    _versions = field_validator("version")(_check_version)


class TorchData(_Row):
    index_url_pattern: str
    releases: tuple[TorchReleaseRow, ...]


class KnowledgeBase(_Row):
    """The whole data file, validated."""

    schema_version: Literal[1]
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


class KnowledgeBaseError(GpushipError):
    """The packaged data file is broken: a gpuship bug, not a user error."""


def parse_knowledge_base(text: str, origin: str = "knowledge.yaml") -> KnowledgeBase:
    """Validate YAML text as a knowledge base (used by the loader and by data tests)."""
    # The C loader (libyaml) is ~9x faster; verify's time-to-verdict budget is one second.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return KnowledgeBase.model_validate(yaml.load(text, Loader=loader))  # noqa: S506 (safe loaders only)
    except (yaml.YAMLError, ValidationError) as exc:
        first_line = str(exc).splitlines()[0]
        raise KnowledgeBaseError(f"{origin}: invalid CUDA knowledge base: {first_line}") from exc


@functools.cache
def knowledge_base() -> KnowledgeBase:
    """The packaged knowledge base, loaded and validated once."""
    path = resources.files("gpuship.cuda") / "data" / "knowledge.yaml"
    return parse_knowledge_base(path.read_text(encoding="utf-8"), str(path))
