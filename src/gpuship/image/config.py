"""The `inspect:` section of `gpuship.yaml`: thresholds and targets for image inspection."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from gpuship.config.section import Section

_TARGET = re.compile(r"^sm_\d{2,3}[af]?$")


class GrowthMax(Section):
    """How much a candidate may grow over its reference (`inspect --compare`); either limit
    passed is a finding (GSI803)."""

    percent: float | None = Field(
        default=None, gt=0, description="Most uncompressed growth, in percent of the reference."
    )
    mib: float | None = Field(default=None, gt=0, description="Most uncompressed growth, in MiB.")


class ImageStageConfig(Section):
    """How `gpuship inspect` (and `gpuship lint --image`) judge a built image."""

    platform: str | None = Field(
        default=None,
        description="Platform picked from a multi-platform index (default: this host's, "
        "normalised as Docker does: linux/arm64 on an aarch64 host).",
    )
    oversized_layer_mib: int = Field(
        default=1024, ge=1, description="A layer larger than this (uncompressed MiB) is flagged."
    )
    size_budget_mib: int | None = Field(
        default=None,
        ge=1,
        description="Total uncompressed image size allowed (MiB); none = no budget.",
    )
    growth_max: GrowthMax | None = Field(
        default=None,
        description="Growth budget of `inspect --compare REF`: `percent` and/or `mib` of "
        "uncompressed size the candidate may add to the reference; none = no budget.",
    )
    targets: list[str] = Field(
        default_factory=list,
        description="GPU architectures every GPU library must run on, e.g. [sm_80, sm_90].",
    )
    weights_min_mib: float = Field(
        default=1.0, ge=0, description="Model files smaller than this (MiB) are not reported."
    )
    waste_floor_mib: float = Field(
        default=10.0,
        ge=0,
        description="Waste below this many MiB is never flagged (dive's percent alone is noisy).",
    )
    lowest_efficiency: float = Field(
        default=0.9, ge=0, le=1, description="dive's lowest-efficiency rule (dive default 0.9)."
    )
    highest_user_wasted_percent: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="dive's highest-user-wasted-percent rule (default 0.1).",
    )
    highest_wasted_mib: float | None = Field(
        default=None,
        ge=0,
        description="dive's highest-wasted-bytes rule in MiB (dive default: disabled).",
    )
    required_labels: list[str] = Field(
        default_factory=lambda: [
            "org.opencontainers.image.source",
            "org.opencontainers.image.revision",
        ],
        description="Labels every image must carry.",
    )
    scan_gpu_code: bool = Field(
        default=True, description="Read `.nv_fatbin` of every shared object for GPU architectures."
    )
    workers: int = Field(default=4, ge=1, le=32, description="Layers scanned at the same time.")

    @field_validator("targets")
    @classmethod
    def _check_targets(cls, value: list[str]) -> list[str]:
        for target in value:
            if not _TARGET.match(target):
                raise ValueError(f"'{target}' is not a GPU architecture like sm_80 or sm_90a")
        return value
