"""The result of `gpuship inspect --compare REF`: a candidate image against a reference.

Sizes are bytes; deltas are candidate minus reference; layers are 0-based indexes of their
own image (`None` where the layer is not in it). `change` is one word per kind of row:
layers and files `added` | `removed` | `grown` | `shrunk`; packages, CUDA libraries and
weights `added` | `removed` | `changed`; findings `new` | `fixed` | `unchanged`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ComparedImage:
    """One side of the comparison: which image, its sizes."""

    reference: str
    manifest_digest: str
    platform: str
    compressed: int
    uncompressed: int
    layers: int


@dataclass(frozen=True)
class SizeChange:
    """Total sizes and their deltas; `percent` is of the reference's (None when it is 0)."""

    compressed_delta: int
    uncompressed_delta: int
    compressed_percent: float | None
    uncompressed_percent: float | None


@dataclass(frozen=True)
class LayerChange:
    """A layer only one image has, or one made by the same instruction with other content."""

    change: str
    candidate_index: int | None
    reference_index: int | None
    candidate_digest: str | None
    reference_digest: str | None
    candidate_size: int
    reference_size: int
    created_by: str


@dataclass(frozen=True)
class FileChange:
    """A file the candidate added or grew, visible in its final filesystem."""

    path: str
    change: str
    candidate_size: int
    reference_size: int
    layer: int


@dataclass(frozen=True)
class PackageChange:
    """A package installed in one image only, or at another version."""

    manager: str
    name: str
    environment: str
    change: str
    candidate_version: str | None
    reference_version: str | None


@dataclass(frozen=True)
class CudaLibraryChange:
    """A CUDA library (system toolkit or pip wheel) whose versions differ."""

    library: str
    location: str
    change: str
    candidate_versions: tuple[str, ...]
    reference_versions: tuple[str, ...]


@dataclass(frozen=True)
class Torch:
    """torch as installed: its version (`2.4.0+cu121`) and variant (`cu121`, `cpu`, `rocm6.1`)."""

    version: str
    variant: str | None


@dataclass(frozen=True)
class WeightsChange:
    """A model weights file added, removed or changed in size."""

    path: str
    format: str
    change: str
    candidate_size: int
    reference_size: int


@dataclass(frozen=True)
class FindingChange:
    """One of gpuship's image findings and whether the candidate brought or fixed it."""

    rule: str
    severity: str
    message: str
    change: str


@dataclass(frozen=True)
class Growth:
    """The growth budget (`inspect.growth-max`) and whether the candidate passed it."""

    max_percent: float | None
    max_mib: float | None
    exceeded: bool


@dataclass(frozen=True)
class ImageComparison:
    """Everything that differs between the candidate and the reference image."""

    candidate: ComparedImage
    reference: ComparedImage
    size: SizeChange
    shared_layers: int
    layers: tuple[LayerChange, ...]
    files: tuple[FileChange, ...]
    packages: tuple[PackageChange, ...]
    cuda_libraries: tuple[CudaLibraryChange, ...]
    candidate_torch: Torch | None
    reference_torch: Torch | None
    weights: tuple[WeightsChange, ...]
    findings: tuple[FindingChange, ...]
    growth: Growth | None
