"""What a cell needs to run, from the CUDA knowledge base: minimum driver and GPU targets.

A combination the knowledge base rules out (a torch release without a wheel for that CUDA,
a GPU target the CUDA release cannot compile or the torch wheel has no kernels for) raises
`InvalidCell` with the reason; versions the knowledge base does not know are refused unless
the image sets `allow-unknown`, and are never guessed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.cuda.arch import ArchTarget, ComputeCapability, CoverageKind, kernel_coverage
from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.toolkits import can_compile, compilable_targets
from gpuship.cuda.torch import TorchVariant, torch_release, torch_variant
from gpuship.cuda.version import Version, as_version

# A `cuda` value that means "no CUDA" (a CPU-only cell next to GPU ones: `cuda: [cpu, "12.6"]`).
CPU_VALUES = frozenset({"cpu", "none"})


class InvalidCell(ValueError):
    """A combination that cannot be built or cannot run as declared; the message says why."""


@dataclass(frozen=True)
class GpuNeeds:
    """What the knowledge base says about one cell's CUDA, torch and GPU targets."""

    cuda: str | None = None
    min_driver: str | None = None
    arch_list: str | None = None
    torch: str | None = None
    torch_variant: str | None = None
    torch_index_url: str | None = None
    notes: tuple[str, ...] = ()


def torch_arch_list(targets: Sequence[ArchTarget]) -> str:
    """Targets in TORCH_CUDA_ARCH_LIST syntax: `8.0;9.0a;12.0+PTX`, ascending."""
    by_name: dict[tuple[ComputeCapability, str], bool] = {}
    for target in targets:
        key = (target.cc, target.variant)
        by_name[key] = by_name.get(key, False) or target.ptx
    return ";".join(
        f"{cc}{variant}{'+PTX' if ptx else ''}" for (cc, variant), ptx in sorted(by_name.items())
    )


@functools.lru_cache(maxsize=4096)
def gpu_needs(
    cuda: str | None,
    torch: str | None,
    targets: tuple[ArchTarget, ...],
    allow_unknown: bool,
) -> GpuNeeds:
    """Resolve one cell's needs; InvalidCell when the combination is not valid."""
    if cuda is None:
        if targets:
            raise InvalidCell("GPU targets are set but the cell has no 'cuda' value")
        return GpuNeeds(torch=torch)
    if cuda.lower() in CPU_VALUES:
        return GpuNeeds(torch=torch)  # GPU targets are for the CUDA cells of the image
    version = _version(cuda, "cuda")
    notes: list[str] = []
    min_driver = _min_driver(version, cuda, allow_unknown, notes)
    if min_driver is not None:
        for target in targets:
            if not can_compile(version, target):
                compilable = ", ".join(cc.sm for cc in compilable_targets(version))
                raise InvalidCell(f"CUDA {cuda} cannot compile {target} (it compiles {compilable})")
    variant = _torch_variant(torch, version, allow_unknown, notes) if torch else None
    if variant is not None and variant.arch_list:
        for target in targets:
            coverage = kernel_coverage(target.cc, variant.arch_list)
            if coverage.kind is CoverageKind.NONE:
                raise InvalidCell(
                    f"torch {torch}+{variant.name} has no kernels for {target.cc.sm} "
                    f"(wheel arch list {variant.arch_list_text})"
                )
    if targets:
        arch_list: str | None = torch_arch_list(targets)
    else:
        arch_list = variant.arch_list_text if variant else None
    return GpuNeeds(
        cuda=cuda,
        min_driver=min_driver,
        arch_list=arch_list,
        torch=torch,
        torch_variant=variant.name if variant else None,
        torch_index_url=variant.index_url if variant else None,
        notes=tuple(notes),
    )


def _version(text: str, what: str) -> Version:
    try:
        return as_version(text)
    except InvalidVersion:
        raise InvalidCell(f"{what} '{text}' is not a version number") from None


def _min_driver(version: Version, cuda: str, allow_unknown: bool, notes: list[str]) -> str | None:
    try:
        driver = min_driver_for(version)
    except UnknownVersion:
        if not allow_unknown:
            raise InvalidCell(
                f"CUDA {cuda} is not in the knowledge base; set allow-unknown: true to build "
                "it without driver and arch labels"
            ) from None
        notes.append(f"CUDA {cuda} is not in the knowledge base: no min-driver label")
        return None
    return driver.text


def _torch_variant(
    torch: str, cuda: Version, allow_unknown: bool, notes: list[str]
) -> TorchVariant | None:
    _version(torch, "torch")
    try:
        return torch_variant(torch, cuda)
    except UnknownVersion as exc:
        if exc.kind == "torch-variant":
            published = ", ".join(v.name for v in torch_release(torch).variants)
            raise InvalidCell(
                f"torch {torch} publishes no CUDA {cuda.major_minor()} wheel (it has {published})"
            ) from None
        if not allow_unknown:
            raise InvalidCell(
                f"{exc.kind} {exc.value} is not in the knowledge base; set allow-unknown: "
                "true to build it without torch labels"
            ) from None
        notes.append(f"torch {torch} is not in the knowledge base: no torch arch list")
        return None
