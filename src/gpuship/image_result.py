"""The image stage's result: what `gpuship inspect` (and `lint --image`, `build`'s image
checks) report about one image, as the `result` of `--format json`.

A contract below the stages, not inside `image/`: the build stage's result embeds it
(`image_checks`), so it is the one shape three commands publish.

Sizes are bytes; paths are absolute paths in the image; layers are 0-based indexes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageIdentity:
    """Which image was read, from where."""

    reference: str
    source: str
    manifest_digest: str
    config_digest: str
    platform: str
    platforms: tuple[str, ...]


@dataclass(frozen=True)
class Sizes:
    """Compressed (registry) and uncompressed (file content) bytes; visible: after whiteouts."""

    compressed: int
    uncompressed: int
    visible: int
    layers: int


@dataclass(frozen=True)
class PathSize:
    """A directory or file and its bytes."""

    path: str
    size: int


@dataclass(frozen=True)
class Layer:
    """One layer: its blob, sizes, the instruction and Dockerfile line that made it."""

    index: int
    digest: str
    diff_id: str
    compression: str
    compressed_size: int
    uncompressed_size: int
    tar_size: int
    files: int
    created_by: str
    dockerfile_line: int | None
    top_dirs: tuple[PathSize, ...]
    top_files: tuple[PathSize, ...]


@dataclass(frozen=True)
class InefficientFile:
    """A path dive counts as wasted: added `count` times, `size` bytes in all."""

    path: str
    count: int
    size: int


@dataclass(frozen=True)
class Dive:
    """dive's own figures for the image (the same rules as `dive --ci`)."""

    efficiency: float
    wasted_bytes: int
    user_size_bytes: int
    user_wasted_percent: float | None
    size_bytes: int
    inefficient_files: tuple[InefficientFile, ...]


@dataclass(frozen=True)
class HiddenFile:
    """Bytes a layer added that a later layer deleted or overwrote."""

    path: str
    size: int
    added_in: int
    hidden_in: int
    how: str


@dataclass(frozen=True)
class Waste:
    """Bytes shipped but never visible, not counting the copy that is kept."""

    corrected_wasted_bytes: int
    hidden_files: int
    largest_hidden: tuple[HiddenFile, ...]


@dataclass(frozen=True)
class Weights:
    """A model weights file in the final filesystem."""

    path: str
    format: str
    size: int
    layer: int


@dataclass(frozen=True)
class FileGroup:
    """Files of one kind (a cache, a toolchain), their bytes and the layers that added them."""

    kind: str
    size: int
    files: int
    layers: tuple[int, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class DuplicateCuda:
    """A CUDA library present both from the system toolkit and from a pip wheel."""

    library: str
    system_size: int
    wheel_size: int
    system_paths: tuple[str, ...]
    wheel_paths: tuple[str, ...]


@dataclass(frozen=True)
class CudaSource:
    """Where a CUDA version was read: a source kind and, for files, their path."""

    source: str
    path: str | None


@dataclass(frozen=True)
class CudaEvidence:
    """One CUDA version found in the image's content."""

    source: str
    version: str
    path: str | None


@dataclass(frozen=True)
class CudaClaim:
    """What the image says about its CUDA (ENV, labels)."""

    source: str
    value: str


@dataclass(frozen=True)
class Cuda:
    """The CUDA the image needs, and the driver that needs."""

    effective: str | None
    min_driver: str | None
    deciding: CudaSource | None
    evidence: tuple[CudaEvidence, ...]
    claims: tuple[CudaClaim, ...]
    has_cuda_compat: bool


@dataclass(frozen=True)
class GpuLibrary:
    """A library with GPU code, and the architectures it has kernels (SASS) or PTX for."""

    path: str
    layer: int
    size: int
    sass: tuple[str, ...]
    ptx: tuple[str, ...]


@dataclass(frozen=True)
class TargetCoverage:
    """A configured target architecture and the libraries that cannot run on it."""

    target: str
    missing: tuple[str, ...]
    ptx_only: tuple[str, ...]


@dataclass(frozen=True)
class Gpu:
    """GPU code in the image: architecture sets over all libraries, per library, per target."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    sass_in_every_library: tuple[str, ...]
    libraries: tuple[GpuLibrary, ...]
    targets: tuple[TargetCoverage, ...]


@dataclass(frozen=True)
class Problem:
    """A layer entry gpuship refused to trust (an absolute or `..` path...)."""

    layer: int
    kind: str
    path: str
    message: str


@dataclass(frozen=True)
class ImageResult:
    """Everything gpuship read from one image."""

    image: ImageIdentity
    size: Sizes
    layers: tuple[Layer, ...]
    dive: Dive
    waste: Waste
    weights: tuple[Weights, ...]
    hub_caches: tuple[FileGroup, ...]
    package_caches: tuple[FileGroup, ...]
    toolchains: tuple[FileGroup, ...]
    duplicate_cuda_libraries: tuple[DuplicateCuda, ...]
    cuda: Cuda
    gpu: Gpu
    env: Mapping[str, str]
    labels: Mapping[str, str]
    problems: tuple[Problem, ...]
