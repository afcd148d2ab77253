"""Route images to runner pools: pure logic on audits and image needs.

A pool is a runner label. An image can be routed to a pool when every known host of the pool
can run it, judged by `compat.verdict.judge` on the host's audit (so route gives the
verdict `gpuship verify` would give on that host) after the image has a variant for the host's
CPU platform. A host whose audit is older than `route.max-audit-age` is unknown: it is left
out of its pools (or fails the route, per `route.stale-audits`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.verdict import judge, judged_reading
from gpuship.route.config import RouteConfig

# uname -m -> the OCI platform architecture (image-spec config.md `architecture`, GOARCH names).
_MACHINE_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def host_platform(audit: HostAudit) -> str:
    """`linux/amd64` for an x86_64 host, `linux/arm64` for aarch64."""
    machine = audit.system.machine
    return f"linux/{_MACHINE_ARCH.get(machine, machine)}"


def os_arch(platform: str) -> str:
    """`linux/arm64/v8` -> `linux/arm64`: hosts are matched on OS and architecture."""
    return "/".join(platform.split("/")[:2])


@dataclass(frozen=True)
class FleetHost:
    """One audited runner as routing sees it."""

    name: str
    audit: HostAudit
    age: timedelta
    stale: bool

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.audit.runner.labels)

    @property
    def platform(self) -> str:
        return host_platform(self.audit)


@dataclass(frozen=True)
class ImageToRoute:
    """An image (or matrix cell) and its GPU needs per platform it is built for."""

    name: str
    needs: Mapping[str, ImageGpuNeeds]


@dataclass(frozen=True)
class HostVerdict:
    """Whether one host can run the image, and why not."""

    host: FleetHost
    runs: bool
    reason: str
    status: Status  # the verdict's: ok, warn (runs with caveats) or fail


@dataclass(frozen=True)
class PoolVerdict:
    """One label for one image: its known hosts' verdicts and its unknown (stale) hosts."""

    pool: str
    verdicts: tuple[HostVerdict, ...]
    unknown: tuple[FleetHost, ...]

    @functools.cached_property  # asked for every image x pool by the report; computed once
    def runs(self) -> bool:
        return bool(self.verdicts) and all(v.runs for v in self.verdicts)

    @property
    def status(self) -> Status | None:
        """The worst verdict of its known hosts; None when it has none (unknown)."""
        if not self.verdicts:
            return None
        return max((v.status for v in self.verdicts), key=lambda status: status.rank)

    @property
    def split(self) -> bool:
        """Some known hosts can run the image and some cannot."""
        return any(v.runs for v in self.verdicts) and not self.runs

    @property
    def failing(self) -> tuple[HostVerdict, ...]:
        return tuple(v for v in self.verdicts if not v.runs)

    def reason(self) -> str:
        """Why the pool cannot run the image (empty when it can)."""
        if self.runs:
            return ""
        if not self.verdicts:
            return "no host with a fresh audit"
        first = self.failing[0]
        return f"{first.host.name}: {first.reason}"


@dataclass(frozen=True)
class RoutedImage:
    """Where one image can go."""

    image: ImageToRoute
    pools: tuple[PoolVerdict, ...]

    @property
    def runnable_pools(self) -> tuple[str, ...]:
        return tuple(p.pool for p in self.pools if p.runs)

    @property
    def chosen(self) -> str | None:
        runnable = self.runnable_pools
        return runnable[0] if runnable else None


@dataclass(frozen=True)
class Routing:
    """The whole answer: every image's route, and what is wrong with the inventory."""

    pools: tuple[str, ...]
    hosts: tuple[FleetHost, ...]
    routes: tuple[RoutedImage, ...]
    missing_pools: tuple[str, ...]

    @property
    def stale_hosts(self) -> tuple[FleetHost, ...]:
        return tuple(h for h in self.hosts if h.stale)

    @property
    def unroutable(self) -> tuple[RoutedImage, ...]:
        return tuple(r for r in self.routes if r.chosen is None)


def fleet_hosts(
    audits: Sequence[tuple[HostAudit, datetime]], now: datetime, max_age: timedelta
) -> tuple[FleetHost, ...]:
    """Hosts from (audit, time taken) pairs, by name (the inventory's order is its tags'
    hashes); names made unique with the hostname."""
    names = [a.runner.runner_name or a.runner.hostname for a, _ in audits]
    hosts = []
    for name, (audit, taken) in zip(names, audits, strict=True):
        unique = f"{name} ({audit.runner.hostname})" if names.count(name) > 1 else name
        age = max(now - taken, timedelta(0))
        hosts.append(FleetHost(name=unique, audit=audit, age=age, stale=age > max_age))
    return tuple(sorted(hosts, key=lambda host: host.name))


def pool_names(hosts: Sequence[FleetHost], config: RouteConfig) -> tuple[str, ...]:
    """The configured pools in their order, else every label: most hosts first, then by name."""
    if config.pools:
        return tuple(config.pools)
    counts: dict[str, int] = {}
    for host in hosts:
        for label in host.labels:
            counts[label] = counts.get(label, 0) + 1
    return tuple(sorted(counts, key=lambda label: (-counts[label], label)))


def host_verdict(
    host: FleetHost, image: ImageToRoute, config: VerifyConfig
) -> tuple[bool, str, Status]:
    """The verify verdict for this host, once the image has a build for the host's platform:
    whether it runs, why not (or its caveat), and its status."""
    needs = image.needs.get(host.platform)
    if needs is None:
        built = ", ".join(sorted(image.needs)) or "no platform"
        return False, f"{host.platform} host, but the image is built for {built}", Status.FAIL
    verdict = judge(host.audit, needs, config)
    return verdict.status is not Status.FAIL, verdict.reason, verdict.status


def route_images(
    hosts: Sequence[FleetHost],
    images: Sequence[ImageToRoute],
    verify_config: VerifyConfig,
    route_config: RouteConfig,
) -> Routing:
    """Judge every image on every host once, then group the verdicts by pool."""
    pools = pool_names(hosts, route_config)
    members = {pool: [i for i, h in enumerate(hosts) if pool in h.labels] for pool in pools}
    # Hosts of a pool usually read the same but for their GPUs' identities: judged once.
    readings = [judged_reading(h.audit, verify_config) for h in hosts]
    routes = []
    for image in images:
        judged: dict[str, tuple[bool, str, Status]] = {}
        verdicts: list[HostVerdict | None] = []
        for host, reading in zip(hosts, readings, strict=True):
            if host.stale:
                verdicts.append(None)
                continue
            if reading not in judged:
                judged[reading] = host_verdict(host, image, verify_config)
            verdicts.append(HostVerdict(host, *judged[reading]))
        pool_verdicts = tuple(
            PoolVerdict(
                pool,
                tuple(v for i in members[pool] if (v := verdicts[i]) is not None),
                tuple(hosts[i] for i in members[pool] if hosts[i].stale),
            )
            for pool in pools
        )
        routes.append(RoutedImage(image, pool_verdicts))
    present = {label for host in hosts for label in host.labels}
    return Routing(
        pools=pools,
        hosts=tuple(hosts),
        routes=tuple(routes),
        missing_pools=tuple(p for p in pools if p not in present),
    )
