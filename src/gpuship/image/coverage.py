"""Which GPUs an image's libraries can run on: per GPU target, the libraries with no kernel
for it and those that reach it only by PTX JIT (`inspect`'s `targets:` and the arch list its
labels promise). What the image needs as a whole is `compat.needs`."""

from __future__ import annotations

from collections.abc import Iterable

from gpuship.cuda.arch import (
    ArchTarget,
    ComputeCapability,
    CoverageKind,
    kernel_coverage,
    parse_arch_list,
)
from gpuship.image.analysis import ScannedLibrary
from gpuship.image_result import TargetCoverage


def library_targets(library: ScannedLibrary) -> tuple[ArchTarget, ...]:
    return parse_arch_list([*library.sass, *library.ptx])


def target_coverage(target: str, libraries: Iterable[ScannedLibrary]) -> TargetCoverage:
    """Whether every GPU library can run on `target` (sm_XX), by SASS or PTX JIT: the
    libraries (absolute paths) with no kernel for it, and those that run it only by PTX JIT."""
    capability = ComputeCapability.parse(target.rstrip("af"))
    missing, ptx_only = [], []
    for library in libraries:
        coverage = kernel_coverage(capability, library_targets(library))
        if coverage.kind == CoverageKind.NONE:
            missing.append("/" + library.path)
        elif coverage.kind == CoverageKind.PTX_JIT:
            ptx_only.append("/" + library.path)
    return TargetCoverage(target, tuple(missing), tuple(ptx_only))


def sm_targets(targets: Iterable[ArchTarget]) -> tuple[str, ...]:
    """The `sm_XX` GPUs arch targets promise kernels for (the `io.gpuship.arch-list` label's,
    as `compat.needs` reads it), sorted."""
    return tuple(sorted({f"sm_{t.cc.major}{t.cc.minor}" for t in targets}))
