"""The matrix stage's results: `gpuship matrix` (a GitHub `strategy.matrix`) and `gpuship lock`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.report.result import flattened


# kw_only: the flattened axes sit after `role` in the JSON, before fields without defaults.
@dataclass(frozen=True, kw_only=True)
class MatrixEntry:
    """One cell: its axis values at the top (GitHub reads them as `matrix.<axis>`), then what
    `gpuship build --cell` needs to build it."""

    id: str
    image: str
    role: str
    axes: Mapping[str, str] = flattened()
    vars: Mapping[str, str]  # the axis values again, as one object
    cuda: str | None
    torch: str | None
    min_driver: str | None
    arch_list: str | None
    torch_variant: str | None
    repository: str
    tags: tuple[str, ...]
    build_args: Mapping[str, str]
    labels: Mapping[str, str]
    cache_from: str | None
    cache_to: str | None
    base_image: str | None
    dockerfile: str
    context: str
    target: str | None
    platforms: tuple[str, ...]
    config_digest: str


@dataclass(frozen=True)
class MatrixResult:
    """`{"include": [...]}`, ready for `strategy: {matrix: ${{ fromJSON(...) }}}`."""

    include: tuple[MatrixEntry, ...]


@dataclass(frozen=True)
class LockResult:
    """The lock file, the digest each base tag resolves to now, and what changed."""

    lock: str
    bases: Mapping[str, str]
    changes: tuple[str, ...]
