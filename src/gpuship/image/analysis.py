"""Turn the layer scans of one image into its figures. Pure: data in, data out.

Content checks (weights, caches, toolchains, CUDA libraries) look at the final filesystem,
what a container really sees; waste looks at every layer, including what later layers hid.
"""

from __future__ import annotations

import gc
import heapq
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gpuship.compat.needs import ImageScan
from gpuship.image import paths
from gpuship.image.dive import DiveFigures, dive_figures
from gpuship.image.layerscan import LayerProblem, LayerScan
from gpuship.image.overlay import FinalFilesystem, ShadowedFile, VisibleFile, final_filesystem
from gpuship.image.source import ResolvedImage
from gpuship.image.tarwalk import REGULAR
from gpuship.image.weights import hub_cache_of
from gpuship.image_result import CudaEvidence

MISSING_HISTORY = "(missing)"
_TOP_DIRS = 5
_TOP_DIR_DEPTH = 2


@dataclass(frozen=True)
class LayerSummary:
    """One layer: its blob, sizes, the instruction that made it, where its bytes are."""

    index: int
    digest: str
    diff_id: str
    compression: str
    compressed_size: int
    uncompressed_size: int  # bytes of the tar stream
    content_size: int  # sum of the file sizes its tar headers state (dive's layer size)
    files: int
    created_by: str
    top_dirs: tuple[tuple[str, int], ...]
    top_files: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class WeightHit:
    """A model weights file visible in the final image."""

    path: str
    format: str
    size: int
    layer: int


@dataclass(frozen=True)
class Group:
    """Files of one kind (a cache, a toolchain) with their bytes and the layers that added them."""

    kind: str
    size: int
    files: int
    layers: tuple[int, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class DuplicateCudaLibrary:
    """A CUDA library shipped both by the system toolkit and by a pip wheel."""

    library: str
    system_size: int
    wheel_size: int
    system_paths: tuple[str, ...]
    wheel_paths: tuple[str, ...]


@dataclass(frozen=True)
class ScannedLibrary:
    """A shared object with GPU code in the final image: its SASS (`sm_XX`) and PTX
    (`compute_XX`) targets. Published as `image_result.GpuLibrary`, its path absolute."""

    path: str
    size: int
    layer: int
    sass: tuple[str, ...]
    ptx: tuple[str, ...]


@dataclass(frozen=True)
class ImageAnalysis:
    """Everything read from one image, before it is judged against the config."""

    image: ResolvedImage
    layers: tuple[LayerSummary, ...]
    dive: DiveFigures
    filesystem: FinalFilesystem
    weights: tuple[WeightHit, ...]
    hub_caches: tuple[Group, ...]
    package_caches: tuple[Group, ...]
    toolchains: tuple[Group, ...]
    duplicate_cuda: tuple[DuplicateCudaLibrary, ...]
    cuda_evidence: tuple[CudaEvidence, ...]
    gpu_libraries: tuple[ScannedLibrary, ...]
    has_cuda_compat: bool
    problems: tuple[tuple[int, LayerProblem], ...]

    @property
    def compressed_size(self) -> int:
        return sum(layer.compressed_size for layer in self.layers)

    @property
    def content_size(self) -> int:
        return sum(layer.content_size for layer in self.layers)

    @property
    def hidden(self) -> tuple[ShadowedFile, ...]:
        return self.filesystem.hidden

    @property
    def scan(self) -> ImageScan:
        """What the image's needs (`compat.needs.image_needs`) read of this analysis."""
        libraries = tuple((lib.path, (*lib.sass, *lib.ptx)) for lib in self.gpu_libraries)
        return ImageScan(self.cuda_evidence, libraries, self.has_cuda_compat)


def layer_history(image: ResolvedImage) -> list[str]:
    """The instruction that made each layer, pairing layers with non-empty history entries.

    Same pairing as dive (`image_archive.go` ToImage): entries marked `empty_layer` (ENV,
    LABEL, WORKDIR...) have no layer and are skipped; a layer without an entry is "(missing)".
    """
    entries = [entry for entry in image.config.history if not entry.empty_layer]
    result = []
    for index in range(len(image.layers)):
        result.append(entries[index].created_by if index < len(entries) else MISSING_HISTORY)
    return result


def _top_files(scan: LayerScan) -> tuple[tuple[str, int], ...]:
    files = [(f"/{entry.path}", entry.size) for entry in scan.entries if entry.kind == REGULAR]
    return tuple(heapq.nsmallest(_TOP_DIRS, files, key=lambda item: (-item[1], item[0])))


def _top_dirs(scan: LayerScan) -> tuple[tuple[str, int], ...]:
    sizes: dict[str, int] = defaultdict(int)
    for entry in scan.entries:
        if entry.kind == REGULAR and entry.size:
            parts = entry.path.split("/")
            key = "/" + "/".join(parts[: min(_TOP_DIR_DEPTH, len(parts) - 1)] or parts[:1])
            sizes[key] += entry.size
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    return tuple(ranked[:_TOP_DIRS])


def _group(kind_of: Mapping[str, list[VisibleFile]]) -> tuple[Group, ...]:
    groups = []
    for kind, files in kind_of.items():
        ordered = sorted(files, key=lambda item: (-item.size, item.path))
        groups.append(
            Group(
                kind=kind,
                size=sum(item.size for item in files),
                files=len(files),
                layers=tuple(sorted({item.layer for item in files})),
                examples=tuple(item.path for item in ordered[:3]),
            )
        )
    return tuple(sorted(groups, key=lambda group: (-group.size, group.kind)))


def _classify(
    files: Iterable[VisibleFile], classify: Callable[[str], str | None]
) -> tuple[Group, ...]:
    found: dict[str, list[VisibleFile]] = defaultdict(list)
    for item in files:
        kind = classify(item.path)
        if kind is not None:
            found[kind].append(item)
    return _group(found)


def _duplicate_cuda(files: Iterable[VisibleFile]) -> tuple[DuplicateCudaLibrary, ...]:
    where: dict[str, dict[str, list[VisibleFile]]] = defaultdict(lambda: defaultdict(list))
    for item in files:
        if item.kind != REGULAR:
            continue
        found = paths.cuda_library(item.path)
        if found:
            library, location = found
            where[library][location].append(item)
    duplicates = []
    for library, places in sorted(where.items()):
        if places.get("system") and places.get("wheel"):
            duplicates.append(
                DuplicateCudaLibrary(
                    library=library,
                    system_size=sum(item.size for item in places["system"]),
                    wheel_size=sum(item.size for item in places["wheel"]),
                    system_paths=tuple(sorted(item.path for item in places["system"])),
                    wheel_paths=tuple(sorted(item.path for item in places["wheel"])),
                )
            )
    return tuple(duplicates)


_CUDA_VERSION_ENV = re.compile(r"^(\d+\.\d+)")


def _env_cuda_evidence(env: Mapping[str, str]) -> tuple[CudaEvidence, ...]:
    """The CUDA the base image states in `CUDA_VERSION` (nvidia/cuda images set it)."""
    match = _CUDA_VERSION_ENV.match(env.get("CUDA_VERSION", ""))
    return (CudaEvidence("CUDA_VERSION", match.group(1), "env CUDA_VERSION"),) if match else ()


def _cuda_evidence(
    image: ResolvedImage, files: Sequence[VisibleFile], texts: Mapping[str, str]
) -> tuple[CudaEvidence, ...]:
    evidence: list[CudaEvidence] = list(_env_cuda_evidence(image.config.env))
    seen_wheels: set[str] = set()
    for item in files:
        if item.path in texts and paths.TORCH_VERSION_FILE.search(item.path):
            version = paths.torch_cuda_from_version_py(texts[item.path])
            if version:
                evidence.append(CudaEvidence("torch", version, "/" + item.path))
        wheel = paths.cuda_runtime_wheel_version(item.path)
        if wheel:
            directory = item.path.split(".dist-info/")[0] + ".dist-info"
            if directory not in seen_wheels:
                seen_wheels.add(directory)
                evidence.append(CudaEvidence("nvidia-cuda-runtime wheel", wheel, "/" + directory))
        soname = paths.cudart_soname_version(item.path)
        if soname:
            evidence.append(CudaEvidence("libcudart", soname, "/" + item.path))
    return tuple(sorted(evidence, key=lambda e: (e.source, e.path, e.version)))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the file trees are built.

    The trees are millions of small linked objects that are all still alive; without the
    pause, CPython re-scans them on every full collection, which more than doubles the time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def analyze(image: ResolvedImage, scans: Sequence[LayerScan]) -> ImageAnalysis:
    """Everything `inspect` reports, computed from the resolved image and its layer scans."""
    with _collector_paused():
        return _analyze(image, scans)


def _analyze(image: ResolvedImage, scans: Sequence[LayerScan]) -> ImageAnalysis:
    history = layer_history(image)
    layers = tuple(
        LayerSummary(
            index=index,
            digest=scan.digest,
            diff_id=scan.diff_id,
            compression=scan.compression,
            compressed_size=scan.compressed_size,
            uncompressed_size=scan.uncompressed_size,
            content_size=sum(entry.size for entry in scan.entries),
            files=len(scan.entries),
            created_by=history[index],
            top_dirs=_top_dirs(scan),
            top_files=_top_files(scan),
        )
        for index, scan in enumerate(scans)
    )
    entries = [scan.entries for scan in scans]
    filesystem = final_filesystem(entries)
    visible = {item.path: item for item in filesystem.files}
    files = filesystem.files

    weights = []
    for index, scan in enumerate(scans):
        for weight in scan.weights:
            shown = visible.get(weight.path)
            if shown is not None and shown.layer == index:
                weights.append(WeightHit(weight.path, weight.format, weight.size, index))
    texts: dict[str, str] = {}
    gpu_libraries = []
    for index, scan in enumerate(scans):
        for path, text in scan.texts.items():
            shown = visible.get(path)
            if shown is not None and shown.layer == index:
                texts[path] = text
        for binary in scan.gpu_binaries:
            shown = visible.get(binary.path)
            if shown is not None and shown.layer == index:
                gpu_libraries.append(
                    ScannedLibrary(
                        binary.path,
                        binary.size,
                        index,
                        tuple(sorted(binary.code.sass, key=_arch_key)),
                        tuple(sorted(binary.code.ptx, key=_arch_key)),
                    )
                )
    regular = [item for item in files if item.kind == REGULAR]
    return ImageAnalysis(
        image=image,
        layers=layers,
        dive=dive_figures(entries),
        filesystem=filesystem,
        weights=tuple(sorted(weights, key=lambda w: (-w.size, w.path))),
        hub_caches=_classify(regular, hub_cache_of),
        package_caches=_classify(regular, paths.package_cache_of),
        toolchains=_classify(regular, paths.toolchain_of),
        duplicate_cuda=_duplicate_cuda(files),
        cuda_evidence=_cuda_evidence(image, files, texts),
        gpu_libraries=tuple(sorted(gpu_libraries, key=lambda lib: lib.path)),
        has_cuda_compat=any(paths.is_cuda_compat(item.path) for item in files),
        problems=tuple(
            (index, problem) for index, scan in enumerate(scans) for problem in scan.problems
        ),
    )


def _arch_key(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)
