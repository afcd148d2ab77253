"""The lint stage's result (`gpuship lint`): per Dockerfile, its stages and finding counts.

`images` holds the image stage's result for each `--image`; the lint stage does not know
its shape (a sibling stage's insides), so the command names it: `LintResult[ImageResult]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from gpuship.report.result import Counts, omitted_if_none

ImageT = TypeVar("ImageT")


@dataclass(frozen=True)
class StageSummary:
    """One build stage (FROM) of a Dockerfile."""

    index: int
    name: str | None
    base: str  # the image reference after ARG substitution
    in_final_image: bool  # its filesystem is (part of) a linted target's image
    built: bool  # a linted target needs it


@dataclass(frozen=True)
class FileSummary:
    """One Dockerfile: its build context, stages, and how many findings it got."""

    file: str
    context: str
    stages: tuple[StageSummary, ...]
    targets: tuple[str, ...]  # the targets linted (every one the file defines, or --target)
    findings: int
    suppressed: int  # silenced by `# gpuship ignore=` / `# hadolint ignore=` pragmas


@dataclass(frozen=True)
class LintResult(Generic[ImageT]):
    """Every Dockerfile linted, and every image checked with `--image`."""

    files: tuple[FileSummary, ...]
    suppressed: int
    counts: Counts
    images: tuple[ImageT, ...] | None = omitted_if_none()
