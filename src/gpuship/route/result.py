"""The route stage's results: `gpuship route` (runner pools, or Kubernetes constraints only)
and `gpuship audit --publish` (the audit as published to the fleet inventory, or why not)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuship.compat.audit import HostAudit
from gpuship.report.result import omitted_if_none

# A PodSpec fragment (`affinity`, `tolerations`) headed by the image it is for: Kubernetes's
# own schema, which the route tests check against its OpenAPI document.
KubernetesDocument = Mapping[str, Any]


@dataclass(frozen=True)
class ArcScaleSet:
    """An Actions Runner Controller runner scale set for the images that share node constraints:
    its name (`runs-on`), its labels (ARC >= 0.14: the images' cell ids) and its
    gha-runner-scale-set Helm values."""

    name: str
    labels: tuple[str, ...]
    images: tuple[str, ...]
    values: Mapping[str, Any]


@dataclass(frozen=True)
class PoolResult:
    """One runner label for one image: whether all its known hosts can run it, and each host."""

    runs: bool
    split: bool  # some hosts can, some cannot
    reason: str
    hosts: Mapping[str, str]  # host -> "ok" or why it cannot run the image
    unknown_hosts: tuple[str, ...]  # hosts whose audit is too old to trust


@dataclass(frozen=True)
class ImageRoute:
    """Where one image can go: the pool chosen, and every pool's verdict."""

    name: str
    pool: str | None
    runs_on: tuple[str, ...] | None  # route.runs-on plus the chosen pool
    runnable_pools: tuple[str, ...]
    pools: Mapping[str, PoolResult]


@dataclass(frozen=True)
class RouteResult:
    """Every image's route over the fleet inventory, and what is wrong with the inventory."""

    pools: tuple[str, ...]
    images: tuple[ImageRoute, ...]
    stale_hosts: tuple[str, ...]
    missing_pools: tuple[str, ...]
    unroutable: tuple[str, ...]
    fleet: str
    kubernetes: tuple[KubernetesDocument, ...] | None = omitted_if_none()
    arc: tuple[ArcScaleSet, ...] | None = omitted_if_none()


@dataclass(frozen=True)
class KubernetesOnly:
    """Without a fleet inventory: each image's Kubernetes node constraints only."""

    kubernetes: tuple[KubernetesDocument, ...]
    images: tuple[str, ...]
    arc: tuple[ArcScaleSet, ...] | None = omitted_if_none()


@dataclass(frozen=True)
class Published:
    """`audit --publish`: the audit, stored as this runner's inventory entry."""

    published: Literal[True]
    entry: str
    audit: HostAudit


@dataclass(frozen=True)
class PublishSkipped:
    """`audit --publish --if-older-than`: the entry is fresh enough; nothing was read."""

    published: Literal[False]
    entry: str
    skipped: str
