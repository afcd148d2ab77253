"""What a check yields (`Check`, with its `Status`), and what several checks share."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gpuship.compat.readings import GpuReading

EXCLUDE_RUNNER = "or exclude this runner label for the job"


class Status(str, enum.Enum):
    """Outcome of one check; `note` passes but is worth saying."""

    OK = "ok"
    NOTE = "note"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.SKIP: 0, Status.OK: 0, Status.NOTE: 0, Status.WARN: 1, Status.FAIL: 2}


@dataclass(frozen=True)
class Check:
    """One check's outcome on one subject (the host, or one GPU)."""

    rule: str
    status: Status
    subject: str
    message: str
    fix: str | None = None


def gpu_subject(gpu: GpuReading) -> str:
    """What a check on one GPU is about: `GPU 0 (NVIDIA H100 80GB HBM3)`."""
    return f"GPU {gpu.index} ({gpu.name})"
