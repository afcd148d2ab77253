"""Compute capabilities, compiled arch targets (SASS/PTX) and whether a GPU can run them.

SASS compatibility follows the binary-compat table in the knowledge base (cuda-compat.md §4.3);
PTX (`compute_XY`) is JIT-compiled by the driver for any GPU of equal or newer capability.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuship.cuda.errors import InvalidVersion

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).

# What the CUDA runtime reports then (error string and name), so users can match their logs.
NO_KERNEL_IMAGE = (
    "no kernel image is available for execution on the device (cudaErrorNoKernelImageForDevice)"
)

# Majors have one or two digits today; a bound keeps a 100,000-digit input from reaching int().
_DOTTED = re.compile(r"([0-9]{1,4})\.([0-9])")
_COMPACT = re.compile(r"([0-9]{1,4})([0-9])")


@functools.total_ordering
@dataclass(frozen=True)
class ComputeCapability:
    """A GPU's (or a compile target's) compute capability, e.g. 8.6."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> ComputeCapability:
        """Accept "8.6", "86", "sm_86" or "compute_86"."""
        value = text.strip().lower()
        for prefix in ("sm_", "compute_"):
            if value.startswith(prefix):
                value = value[len(prefix) :]
                match = _COMPACT.fullmatch(value)
                break
        else:
            match = _DOTTED.fullmatch(value) or _COMPACT.fullmatch(value)
        if not match:
            raise InvalidVersion(text, "compute capability")
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __lt__(self, other: ComputeCapability) -> bool:
        return (self.major, self.minor) < (other.major, other.minor)


def as_capability(value: str | ComputeCapability) -> ComputeCapability:
    return value if isinstance(value, ComputeCapability) else ComputeCapability.parse(value)


@dataclass(frozen=True)
class ArchTarget:
    """One compiled target: SASS (`sm_90a`) or PTX (`compute_90`); variant "", "a" or "f"."""

    cc: ComputeCapability
    ptx: bool = False
    variant: str = ""

    def __str__(self) -> str:
        prefix = "compute" if self.ptx else "sm"
        return f"{prefix}_{self.cc.major}{self.cc.minor}{self.variant}"


_NVCC_NAME = re.compile(r"(sm|compute)_([0-9]{1,4})([0-9])([af]?)")
_TORCH_NAME = re.compile(r"([0-9]{1,4})\.([0-9])([af]?)(\+ptx)?")


def _parse_token(token: str) -> list[ArchTarget]:
    value = token.strip().lower()
    match = _NVCC_NAME.fullmatch(value)
    if match:
        cc = ComputeCapability(int(match.group(2)), int(match.group(3)))
        return [ArchTarget(cc, ptx=match.group(1) == "compute", variant=match.group(4))]
    match = _TORCH_NAME.fullmatch(value)
    if match:
        cc = ComputeCapability(int(match.group(1)), int(match.group(2)))
        sass = ArchTarget(cc, ptx=False, variant=match.group(3))
        # TORCH_CUDA_ARCH_LIST "X.Y+PTX" builds SASS for X.Y plus PTX for X.Y.
        return (
            [sass, ArchTarget(cc, ptx=True, variant=match.group(3))] if match.group(4) else [sass]
        )
    raise InvalidVersion(token, "arch target")


def parse_arch_list(value: str | Iterable[str]) -> tuple[ArchTarget, ...]:
    """Parse TORCH_CUDA_ARCH_LIST ("7.5;8.0;12.0+PTX"), nvcc names ("sm_90a", "compute_120")
    or `torch.cuda.get_arch_list()` output; separators `;`, `,` or whitespace. Order kept,
    duplicates dropped."""
    tokens = re.split(r"[;,\s]+", value) if isinstance(value, str) else list(value)
    targets: list[ArchTarget] = []
    for token in tokens:
        if not token.strip():
            continue
        for target in _parse_token(token):
            if target not in targets:
                targets.append(target)
    return tuple(targets)


def format_arch_list(targets: Iterable[ArchTarget]) -> str:
    """Targets as nvcc names separated by spaces ("sm_80 sm_90 compute_90")."""
    return " ".join(str(t) for t in targets)


@dataclass(frozen=True)
class _Rule:
    low: ComputeCapability
    below: ComputeCapability
    excluded: frozenset[ComputeCapability]
    also: frozenset[ComputeCapability]


@functools.cache
def _binary_rules() -> dict[ComputeCapability, _Rule]:
    from gpuship.cuda.knowledge import knowledge_base

    rules = {}
    for row in knowledge_base().binary_compat.rules:
        rules[ComputeCapability.parse(row.code)] = _Rule(
            ComputeCapability.parse(row.min),
            ComputeCapability.parse(row.below),
            frozenset(ComputeCapability.parse(c) for c in row.except_),
            frozenset(ComputeCapability.parse(c) for c in row.also),
        )
    return rules


def sass_runs_on(target: ArchTarget, gpu: ComputeCapability) -> bool:
    """Whether SASS built for `target` runs on a GPU of capability `gpu` (no JIT)."""
    if target.ptx:
        return False
    if target.variant == "a":
        # Arch-specific targets (sm_90a) are not forward compatible at all.
        return gpu == target.cc
    rule = _binary_rules().get(target.cc)
    if rule is None:
        return gpu.major == target.cc.major and gpu.minor >= target.cc.minor
    if gpu in rule.also:
        return True
    return rule.low <= gpu < rule.below and gpu not in rule.excluded


def ptx_jit_runs_on(target: ArchTarget, gpu: ComputeCapability) -> bool:
    """Whether PTX for `target` can be JIT-compiled for `gpu` (driver PTX ISA aside)."""
    if not target.ptx:
        return False
    if target.variant == "a":
        return gpu == target.cc
    if target.variant == "f":
        return gpu.major == target.cc.major and gpu >= target.cc
    return gpu >= target.cc


class CoverageKind(str, enum.Enum):
    """How a GPU gets a kernel from an image: SASS, PTX JIT, or not at all."""

    SASS = "sass"
    PTX_JIT = "ptx-jit"
    NONE = "none"


@dataclass(frozen=True)
class Coverage:
    kind: CoverageKind
    target: ArchTarget | None
    message: str


def kernel_coverage(gpu: ComputeCapability | str, targets: Iterable[ArchTarget]) -> Coverage:
    """Decide how `gpu` runs code compiled for `targets` (best SASS, else newest usable PTX)."""
    cc = as_capability(gpu)
    target_list = tuple(targets)
    sass = [t for t in target_list if sass_runs_on(t, cc)]
    if sass:
        best = max(sass, key=lambda t: t.cc)
        return Coverage(CoverageKind.SASS, best, f"SASS {best} runs on compute capability {cc}")
    ptx = [t for t in target_list if ptx_jit_runs_on(t, cc)]
    if ptx:
        best = max(ptx, key=lambda t: t.cc)
        return Coverage(
            CoverageKind.PTX_JIT,
            best,
            f"no SASS for compute capability {cc}; the driver JIT-compiles PTX {best} on first "
            "start (slow, and needs a driver at least as new as the image's CUDA)",
        )
    listed = format_arch_list(target_list) or "none"
    return Coverage(
        CoverageKind.NONE,
        None,
        f"no SASS or PTX usable by compute capability {cc} (image has: {listed}): "
        f"{NO_KERNEL_IMAGE}",
    )
