"""The verify stage's results: `gpuship verify` (a verdict on one host) and `gpuship fleet`
(every image x runner). `gpuship audit`'s result is the audit document itself (`HostAudit`,
schema in compat/audit.schema.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageNeeds:
    """What the image needs from a GPU host, and where each need was read."""

    image: str
    cuda: str | None
    cuda_source: str | None
    min_driver: str | None
    arch_list: tuple[str, ...] | None
    arch_source: str | None
    compat_cuda: str | None
    compat_source: str | None
    require: Mapping[str, str]  # the image's NVIDIA_* environment


@dataclass(frozen=True)
class CheckResult:
    """One check on one subject (the host, or one GPU)."""

    rule: str
    status: str  # ok | note | warn | fail
    subject: str
    message: str
    fix: str | None


@dataclass(frozen=True)
class VerifyResult:
    """Whether this host can run the image (`verdict`: ok, warn or fail), and every check."""

    verdict: str
    reason: str
    runner: str
    driver: str
    cuda: str
    image: ImageNeeds | None  # null: the host alone was checked
    checks: tuple[CheckResult, ...]


@dataclass(frozen=True)
class GridCell:
    """One image on one runner."""

    image: str
    runner: str
    status: str  # ok | warn | fail
    reason: str


@dataclass(frozen=True)
class FleetResult:
    """Which runner can run which image, and what the fleet's drivers allow."""

    runners: tuple[str, ...]
    images: tuple[str, ...]
    cells: tuple[GridCell, ...]
    oldest_driver: str
    driver_for_all_images: str | None
    driver_unknown_for: tuple[str, ...]
    unrunnable_images: tuple[str, ...]
    runners_running_nothing: tuple[str, ...]
    exclude: Mapping[str, tuple[str, ...]]  # image -> runner labels to exclude
    runnable_on: Mapping[str, tuple[str, ...]]  # image -> runners that can run it
