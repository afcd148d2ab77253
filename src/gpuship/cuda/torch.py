"""torch releases -> published CUDA wheel variants, their arch lists and the PyPI default.

A variant the table does not list is "known not to exist" only for a release whose variant
list is complete; for any other release it is unknown to gpuship (`Availability`).
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from gpuship.cuda.arch import ArchTarget, parse_arch_list
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.version import Version, as_version

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).

_VARIANT = re.compile(r"cu([0-9]{1,4})([0-9])")


def variant_name(cuda: str | Version) -> str:
    """CUDA 12.4 -> "cu124" (the wheel index / local-version suffix)."""
    version = as_version(cuda, "CUDA version")
    return f"cu{version.major}{version.minor}"


def cuda_of_variant(name: str) -> Version:
    """ "cu124" -> CUDA 12.4; "cu130" -> 13.0."""
    match = _VARIANT.fullmatch(name.strip().lower())
    if not match:
        raise InvalidVersion(name, "torch CUDA variant")
    return Version.parse(f"{int(match.group(1))}.{match.group(2)}")


@dataclass(frozen=True)
class TorchVariant:
    """One published CUDA wheel variant of a torch release."""

    name: str
    cuda: Version
    channel: str
    arch_list: tuple[ArchTarget, ...] | None
    arch_list_text: str | None
    cuda_runtime_wheel: str | None
    index_url: str
    source: str


class Availability(enum.Enum):
    """Whether a torch release has a CUDA variant, as far as the knowledge base can tell."""

    PUBLISHED = "published"
    ABSENT = "absent"  # the release's variant list is complete and lacks it
    UNKNOWN = "unknown"  # not in gpuship's table for an open release: it may exist


@dataclass(frozen=True)
class TorchRelease:
    """A torch minor release and its CUDA variants."""

    version: Version
    variants: tuple[TorchVariant, ...]
    pypi_default: str | None
    pypi_default_source: str | None
    source: str
    complete: bool = False  # the variants are all the release has (see knowledge.yaml)
    cudnn_major: int | None = None  # the cuDNN major its PyPI wheel pins (None: unknown)

    def variant(self, cuda: str | Version) -> TorchVariant | None:
        """The variant built for CUDA `cuda` (major.minor), if the table lists it."""
        wanted = as_version(cuda, "CUDA version").major_minor()
        return next((v for v in self.variants if v.cuda == wanted), None)

    def availability(self, cuda: str | Version) -> Availability:
        """Published, known absent (complete table only), or unknown to gpuship."""
        if self.variant(cuda) is not None:
            return Availability.PUBLISHED
        return Availability.ABSENT if self.complete else Availability.UNKNOWN

    def variant_names(self) -> str:
        """ "cu126, cu128" (or "none recorded")."""
        return ", ".join(v.name for v in self.variants) or "none recorded"


@functools.cache
def _releases() -> dict[Version, TorchRelease]:
    from gpuship.cuda.knowledge import knowledge_base

    data = knowledge_base().torch
    releases = {}
    for row in data.releases:
        variants = tuple(
            TorchVariant(
                name=v.name,
                cuda=cuda_of_variant(v.name),
                channel=v.channel,
                arch_list=parse_arch_list(v.arch_list) if v.arch_list else None,
                arch_list_text=v.arch_list,
                cuda_runtime_wheel=v.cuda_runtime_wheel,
                index_url=data.index_url_pattern.format(variant=v.name),
                source=v.source,
            )
            for v in row.variants
        )
        version = Version.parse(row.version)
        releases[version] = TorchRelease(
            version,
            variants,
            row.pypi_default,
            row.pypi_default_source,
            row.source,
            row.complete,
            row.cudnn_major,
        )
    return releases


def known_torch_releases() -> tuple[Version, ...]:
    return tuple(sorted(_releases()))


def recorded_torch_releases() -> tuple[Version, ...]:
    """The releases whose CUDA wheels the knowledge base records: not one known only to exist
    (2.15, listed on PyPI, its variants not yet read), for which `kb torch` says none recorded."""
    return tuple(sorted(v for v, release in _releases().items() if release.variants))


def last_release_with(variant: str) -> Version | None:
    """The last torch release of a variant torch no longer builds (cu118 -> 2.7); None while
    the variant is not known to be retired."""
    from gpuship.cuda.knowledge import knowledge_base

    for row in knowledge_base().torch.retired_variants:
        if row.name == variant:
            return Version.parse(row.last_release)
    return None


def torch_release(version: str | Version) -> TorchRelease:
    """The row for torch `version` ("2.6.0", "2.6", "2.6.0+cu124"); UnknownVersion if absent."""
    text = str(version).split("+", 1)[0]
    key = as_version(text, "torch version").major_minor()
    release = _releases().get(key)
    if release is None:
        raise UnknownVersion("torch", str(version))
    return release


def torch_variant(torch_version: str | Version, cuda: str | Version) -> TorchVariant:
    """The wheel variant of torch `torch_version` for CUDA `cuda`.

    Raises UnknownVersion(kind="torch-variant") when that release is known to publish no such
    wheel, and UnknownVersion(kind="torch") when gpuship's table does not say either way.
    """
    release = torch_release(torch_version)
    variant = release.variant(cuda)
    if variant is not None:
        return variant
    wanted = f"{torch_version}+{variant_name(cuda)}"
    listed = f"torch {release.version} lists {release.variant_names()}"
    if release.availability(cuda) is Availability.ABSENT:
        raise UnknownVersion("torch-variant", wanted, f"{listed}, and nothing else")
    raise UnknownVersion("torch", wanted, f"{listed}; others are unknown to gpuship")


@dataclass(frozen=True)
class LibraryWheel:
    """A CUDA library wheel torch pins, with its download size in MB (10^6 bytes)."""

    library: str
    wheel: str
    size_mb: float


def image_libraries(flavors: tuple[str, ...]) -> frozenset[str]:
    """The CUDA libraries an nvidia/cuda image of these flavours ("runtime", "cudnn") holds."""
    from gpuship.cuda.knowledge import knowledge_base

    rows = knowledge_base().cuda_image_libraries.flavors
    return frozenset(lib for row in rows if row.flavor in flavors for lib in row.libraries)


@dataclass(frozen=True)
class LibraryWheels:
    """The CUDA library wheels of one CUDA major, as the torch release `pinned_by` pins them."""

    cuda_major: int
    pinned_by: str
    wheels: tuple[LibraryWheel, ...]


def library_wheels(cuda_major: int) -> LibraryWheels | None:
    """The CUDA library wheels torch pins for CUDA `cuda_major` (None: not recorded)."""
    from gpuship.cuda.knowledge import knowledge_base

    for row in knowledge_base().cuda_library_wheels:
        if row.cuda_major == cuda_major:
            wheels = tuple(LibraryWheel(w.library, w.wheel, w.size_mb) for w in row.wheels)
            return LibraryWheels(row.cuda_major, row.pinned_by, wheels)
    return None
