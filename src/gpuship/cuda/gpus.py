"""GPU model names (as NVML reports them) -> compute capability, and NVML brand names."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gpuship.cuda.arch import ComputeCapability
from gpuship.cuda.errors import UnknownVersion

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).


@dataclass(frozen=True)
class GpuModel:
    """A GPU model from the knowledge base."""

    name: str
    compute_capability: ComputeCapability
    segment: str
    source: str


@functools.cache
def _models() -> tuple[tuple[GpuModel, tuple[re.Pattern[str], ...]], ...]:
    from gpuship.cuda.knowledge import knowledge_base

    return tuple(
        (
            GpuModel(
                row.name,
                ComputeCapability.parse(row.compute_capability),
                row.segment,
                row.source,
            ),
            tuple(re.compile(p) for p in row.patterns),
        )
        for row in knowledge_base().gpus
    )


def _normalise(name: str) -> str:
    return " ".join(re.sub(r"[-_/]", " ", name.lower()).split())


def find_gpu(name: str) -> GpuModel | None:
    """The model a GPU name denotes ("NVIDIA A100-SXM4-80GB", "Tesla T4", "H100"), or None.

    When several models match, the longest match wins; equally long matches that disagree on
    the compute capability give None (ambiguous is unknown).
    """
    text = _normalise(name)
    best: list[tuple[int, GpuModel]] = []
    for model, patterns in _models():
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                best.append((len(match.group(0)), model))
    if not best:
        return None
    longest = max(length for length, _ in best)
    winners = {m.compute_capability: m for length, m in best if length == longest}
    return next(iter(winners.values())) if len(winners) == 1 else None


def gpu_compute_capability(name: str) -> ComputeCapability:
    """Compute capability of the GPU `name`; UnknownVersion if the model is not known."""
    model = find_gpu(name)
    if model is None:
        raise UnknownVersion("gpu", name)
    return model.compute_capability


def brand_from_nvml(value: int) -> str:
    """NVML `nvmlDeviceGetBrand` value -> the brand string libnvidia-container compares."""
    from gpuship.cuda.knowledge import knowledge_base

    names = knowledge_base().brands.names
    return names[value] if 0 <= value < len(names) else names[0]
