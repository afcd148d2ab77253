"""The kb stage's results (`gpuship kb SUBCOMMAND`): one type per sub-command.

What the knowledge base holds as plain text is published as the `cuda` types themselves (a
requirement, a failed factor); where those hold parsed values (versions, compute
capabilities) or more than a lookup answers, the answer has a type of its own here, named for
what it says and published under the name the schema has always given it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gpuship.cuda.require import FailedFactor, Requirement


@dataclass(frozen=True)
class DriverFor:
    """`kb driver-for CUDA`: the driver a CUDA release needs (null: not in the knowledge base)."""

    cuda: str
    minor_compat_floor: str | None  # oldest driver running it by minor version compatibility
    minor_compat_caveats: tuple[str, ...]
    release: str | None
    min_driver: str | None
    source: str | None


@dataclass(frozen=True)
class TorchWheel:
    """One CUDA wheel variant of a torch release."""

    PUBLISHED_NAME: ClassVar[str] = "TorchVariant"

    name: str
    cuda: str
    channel: str
    arch_list: str | None
    index_url: str
    cuda_runtime_wheel: str | None
    source: str


@dataclass(frozen=True)
class TorchWheels:
    """`kb torch VERSION`: its CUDA variants, and the one plain `pip install torch` gets."""

    PUBLISHED_NAME: ClassVar[str] = "TorchRelease"

    torch: str
    pypi_default: str | None
    pypi_default_source: str | None
    complete: bool  # every CUDA variant of the release is known (else: others may exist)
    variants: tuple[TorchWheel, ...]
    source: str


@dataclass(frozen=True)
class GpuCapability:
    """`kb gpu NAME`: a GPU model's compute capability."""

    PUBLISHED_NAME: ClassVar[str] = "GpuModel"

    name: str
    model: str
    compute_capability: str
    sm: str
    segment: str
    source: str


@dataclass(frozen=True)
class KnowledgeSummary:
    """`kb show`: what the knowledge base holds."""

    PUBLISHED_NAME: ClassVar[str] = "KnowledgeBase"

    schema_version: int
    updated: str
    cuda_releases: tuple[str, ...]
    torch_releases: tuple[str, ...]
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class HostGpu:
    """A GPU as nvidia-container-cli sees it."""

    brand: str | None
    arch: str


@dataclass(frozen=True)
class Host:
    """The host the requirements were checked against (null: not given, that check passes)."""

    driver: str | None
    cuda: str | None
    gpus: tuple[HostGpu, ...]


@dataclass(frozen=True)
class Failure:
    """The requirement that failed, as nvidia-container-cli reports it."""

    variable: str
    expression: str
    gpu_index: int | None
    condition: str
    message: str
    failed_factors: tuple[FailedFactor, ...]


@dataclass(frozen=True)
class RequireCheck:
    """`kb check-require`: whether the image's NVIDIA_REQUIRE_* hold on the host."""

    satisfied: bool
    disabled: bool  # NVIDIA_DISABLE_REQUIRE is set
    requirements: tuple[Requirement, ...]
    host: Host
    failure: Failure | None


KbResult = DriverFor | TorchWheels | GpuCapability | KnowledgeSummary | RequireCheck
