"""`gpuship fleet plan`: what a change to the fleet or its images does, before it is made.

The change is applied to the audits and the images as the change itself would leave them
(`changed_hosts`, `changed_images`), then both sides are routed by `route_images`, the function
`gpuship route` uses: so the plan's "after" is what `route` and `fleet` say once the change is
made (tests/unit/route/test_route_plan_matches_route.py holds the two together).

- `--driver POOL=VERSION`: every host carrying label POOL runs driver VERSION, whose CUDA
  version is the newest the toolkit table gives that driver, and whose CDI spec is regenerated
  for it (as the NVIDIA Container Toolkit's refresh units do on a driver change).
- `--cuda [IMAGE=]X.Y`: a variant of each image (or of IMAGE) built for CUDA X.Y: the CUDA
  release and its minimum driver relabelled, GPU targets nvcc X.Y cannot compile left out.
- `--retire GPU|HOST`: hosts named so leave the fleet; GPUs whose name holds GPU leave their
  hosts, and a host left without a GPU leaves the fleet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Status
from gpuship.compat.checks.driver import native_driver
from gpuship.compat.config import VerifyConfig
from gpuship.compat.hosts import gpu_named
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.cuda.arch import ArchTarget, format_arch_list
from gpuship.cuda.drivers import cuda_for_driver, dropped_generation, min_driver_for
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.toolkits import can_compile
from gpuship.cuda.version import Version
from gpuship.errors import UsageError
from gpuship.labels import LABEL_ARCH_LIST, LABEL_CUDA, LABEL_MIN_DRIVER
from gpuship.route.config import RouteConfig
from gpuship.route.routing import FleetHost, ImageToRoute, PoolVerdict, Routing, route_images

ABSENT = "absent"  # an image that exists only after the change (a new CUDA variant)
UNKNOWN = "unknown"  # a pool with no host (left) to judge


@dataclass(frozen=True)
class Change:
    """A planned change: pool drivers, new CUDA variants, retired GPUs or hosts."""

    drivers: tuple[tuple[str, Version], ...] = ()
    cuda: tuple[tuple[str | None, Version], ...] = ()  # (image, or None: every image; CUDA)
    retire: tuple[str, ...] = ()

    def describe(self) -> tuple[str, ...]:
        return (
            *(f"driver {driver} on pool {pool}" for pool, driver in self.drivers),
            *(f"CUDA {cuda} variant of {image or 'every image'}" for image, cuda in self.cuda),
            *(f"retire {name}" for name in self.retire),
        )


def parse_change(drivers: Sequence[str], cuda: Sequence[str], retire: Sequence[str]) -> Change:
    """The flags as a `Change`; a malformed one is a usage error naming the flag."""
    if not (drivers or cuda or retire):
        raise UsageError("fleet plan: give a change: --driver POOL=VERSION, --cuda X.Y or --retire")
    parsed_drivers = []
    for text in drivers:
        pool, _, version = text.partition("=")
        if not pool or not version:
            raise UsageError(f"--driver {text!r}: expected POOL=VERSION (gpu-a100=580.65.06)")
        parsed_drivers.append((pool, _version(version, f"--driver {text}", "driver version")))
    parsed_cuda = []
    for text in cuda:
        image, _, version = text.rpartition("=")
        release = _version(version, f"--cuda {text}", "CUDA version").major_minor()
        try:
            min_driver_for(release)
        except UnknownVersion as error:
            raise UsageError(f"--cuda {text}: {error}") from None
        parsed_cuda.append((image or None, release))
    return Change(tuple(parsed_drivers), tuple(parsed_cuda), tuple(retire))


def _version(text: str, flag: str, what: str) -> Version:
    try:
        return Version.parse(text, what)
    except InvalidVersion as error:
        raise UsageError(f"{flag}: {error}") from None


def changed_hosts(hosts: Sequence[FleetHost], change: Change) -> tuple[FleetHost, ...]:
    """The hosts as the change leaves them; a change that names nothing is a usage error."""
    for pool, _ in change.drivers:
        if not any(pool in host.labels for host in hosts):
            raise UsageError(f"--driver {pool}=...: no host carries label {pool} (unknown pool)")
    for name in change.retire:
        if not any(_named(host, name) or _holds(host.audit, name) for host in hosts):
            raise UsageError(f"--retire {name}: names no host and no GPU of the fleet")
    after = []
    for host in hosts:
        audit = host.audit
        for pool, driver in change.drivers:
            if pool in host.labels:
                audit = with_driver(audit, driver)
        if any(_named(host, name) for name in change.retire):
            continue
        audit = without_gpus(audit, change.retire)
        if host.audit.nvml.gpus and not audit.nvml.gpus:
            continue
        after.append(replace(host, audit=audit))
    return tuple(after)


def with_driver(audit: HostAudit, driver: Version) -> HostAudit:
    """The audit after a driver change: NVML reads the new driver and the CUDA version the
    toolkit table gives it; CDI specs generated for the old driver name the new one."""
    cuda = cuda_for_driver(driver)
    if cuda is None:
        raise UsageError(
            f"--driver {driver}: older than every CUDA release the knowledge base knows"
        )
    old = audit.nvml.driver_version
    nvml = audit.nvml.model_copy(
        update={"driver_version": str(driver), "cuda_driver_version": str(cuda)}
    )
    specs = [
        spec.model_copy(
            update={
                "driver_versions": [str(driver) if v == old else v for v in spec.driver_versions]
            }
        )
        for spec in audit.container.cdi_specs
    ]
    container = audit.container.model_copy(update={"cdi_specs": specs})
    return audit.model_copy(update={"nvml": nvml, "container": container})


def without_gpus(audit: HostAudit, names: Sequence[str]) -> HostAudit:
    """The audit without the GPUs whose model any of `names` names."""
    gpus = [gpu for gpu in audit.nvml.gpus if not any(gpu_named(name, gpu.name) for name in names)]
    if len(gpus) == len(audit.nvml.gpus):
        return audit
    return audit.model_copy(update={"nvml": audit.nvml.model_copy(update={"gpus": gpus})})


def retired_hosts(hosts: Sequence[FleetHost], name: str) -> tuple[str, ...]:
    """The hosts `--retire name` takes out or takes GPUs from."""
    return tuple(h.name for h in hosts if _named(h, name) or _holds(h.audit, name))


def _named(host: FleetHost, name: str) -> bool:
    runner = host.audit.runner
    return name in (host.name, runner.hostname, runner.runner_name)


def _holds(audit: HostAudit, name: str) -> bool:
    return any(gpu_named(name, gpu.name) for gpu in audit.nvml.gpus)


def changed_images(images: Sequence[ImageToRoute], change: Change) -> tuple[ImageToRoute, ...]:
    """The images after the change: the same, plus each new CUDA variant."""
    names = {image.name for image in images}
    for wanted, _ in change.cuda:
        if wanted is not None and wanted not in names:
            raise UsageError(f"--cuda {wanted}=...: no image named {wanted}")
    variants = [
        variant(image, cuda)
        for wanted, cuda in change.cuda
        for image in images
        if wanted in (None, image.name)
    ]
    return (*images, *variants)


def variant(image: ImageToRoute, cuda: Version) -> ImageToRoute:
    """The image rebuilt for CUDA `cuda`, judged by its labels as `gpuship build` writes them."""
    name = f"{image.name}+cuda{cuda}"
    return ImageToRoute(
        name, {platform: _rebuilt(needs, name, cuda) for platform, needs in image.needs.items()}
    )


def _rebuilt(needs: ImageGpuNeeds, name: str, cuda: Version) -> ImageGpuNeeds:
    labels = {
        key: value
        for key, value in needs.labels.items()
        if key not in (LABEL_CUDA, LABEL_MIN_DRIVER, LABEL_ARCH_LIST)
    }
    labels[LABEL_CUDA] = str(cuda)
    labels[LABEL_MIN_DRIVER] = str(min_driver_for(cuda))
    if needs.arch_targets is not None:
        kept = [t for t in needs.arch_targets if _compiles(cuda, t)]
        if kept:
            labels[LABEL_ARCH_LIST] = format_arch_list(kept)
    # The base image's CUDA environment changes with the rebuild; the rest of it stays.
    env = {
        k: v for k, v in needs.env.items() if not k.startswith(("CUDA_VERSION", "NVIDIA_REQUIRE"))
    }
    return image_needs(name, env, labels, platform=needs.platform)


def _compiles(cuda: Version, target: ArchTarget) -> bool:
    """nvcc of `cuda` compiles `target`; a target the knowledge base does not know for it is
    left out (the rebuilt image is not claimed to run where nobody knows it does)."""
    try:
        return can_compile(cuda, target)
    except UnknownVersion:
        return False


@dataclass(frozen=True)
class PoolState:
    """One image on one pool: ok, warn, fail, unknown (no host to judge) or absent."""

    status: str
    why: str


@dataclass(frozen=True)
class FleetPlan:
    """Both sides of the change, routed the way `gpuship route` routes."""

    change: Change
    before: Routing
    after: Routing
    images_before: tuple[str, ...]

    def state(self, routing: Routing, image: str, pool: str) -> PoolState:
        route = next((r for r in routing.routes if r.image.name == image), None)
        if route is None:
            return PoolState(ABSENT, "")
        verdict = next(p for p in route.pools if p.pool == pool)
        return pool_state(verdict)

    @property
    def pools(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.before.pools, *self.after.pools)))

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(route.image.name for route in self.after.routes)

    @property
    def losing_every_host(self) -> tuple[str, ...]:
        """Images in use that run on some pool before and on none after."""
        before = {r.image.name for r in self.before.routes if r.chosen is not None}
        return tuple(
            r.image.name for r in self.after.routes if r.chosen is None and r.image.name in before
        )

    def lowest_driver(self) -> tuple[Version | None, tuple[str, ...]]:
        """The lowest driver that runs every image after the change natively, and the images
        whose minimum driver is unknown."""
        needed: list[Version] = []
        unknown: list[str] = []
        for route in self.after.routes:
            drivers = [native_driver(needs) for needs in route.image.needs.values()]
            known = [d for d in drivers if d is not None]
            if len(known) < len(drivers) or not drivers:
                unknown.append(route.image.name)
            needed.extend(known)
        return (max(needed) if needed else None), tuple(unknown)


def pool_state(verdict: PoolVerdict) -> PoolState:
    """What `route` says of an image on a pool, with the reason of its first failing (else
    warning) host."""
    status = verdict.status
    if status is None:
        return PoolState(UNKNOWN, verdict.reason())
    if status is Status.FAIL:
        return PoolState("fail", verdict.reason())
    if status is Status.WARN:
        first = next(v for v in verdict.verdicts if v.status is Status.WARN)
        return PoolState("warn", f"{first.host.name}: {first.reason}")
    return PoolState("ok", "")


def plan_change(
    hosts: Sequence[FleetHost],
    images: Sequence[ImageToRoute],
    change: Change,
    verify: VerifyConfig,
    route: RouteConfig,
) -> FleetPlan:
    """Route before and after the change."""
    before = route_images(hosts, images, verify, route)
    # The pools of before on both sides: a pool the change empties is there, unknown.
    same_pools = route.model_copy(update={"pools": list(before.pools)})
    after = route_images(
        changed_hosts(hosts, change), changed_images(images, change), verify, same_pools
    )
    return FleetPlan(change, before, after, tuple(image.name for image in images))


@dataclass(frozen=True)
class Dropped:
    """Hosts of a pool whose GPU generation the pool's new driver branch no longer supports."""

    pool: str
    driver: Version
    generation: str
    hosts: tuple[str, ...]
    source: str


def dropped_generations(hosts: Sequence[FleetHost], change: Change) -> tuple[Dropped, ...]:
    """For each --driver change, the GPU generations its branch drops on the pool's hosts."""
    found: list[Dropped] = []
    for pool, driver in change.drivers:
        by_generation: dict[str, tuple[list[str], str]] = {}
        for host in hosts:
            if pool not in host.labels:
                continue
            for gpu in host.audit.nvml.gpus:
                row = dropped_generation(driver.major, gpu.compute_capability)
                if row is not None:
                    names, _ = by_generation.setdefault(row.generation, ([], row.source))
                    if host.name not in names:
                        names.append(host.name)
        found.extend(
            Dropped(pool, driver, generation, tuple(names), source)
            for generation, (names, source) in by_generation.items()
        )
    return tuple(found)
