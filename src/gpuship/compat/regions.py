"""Where an image passes the verdict, in the terms node labels use: for schedulers that pick
nodes by labels (Kubernetes with NVIDIA GPU Feature Discovery) instead of by audits.

A node label shows the host's CPU architecture, driver version, the CUDA version the driver
supports and the GPUs' compute capability, count, memory and MIG state; it does not show the
GPU brand. `passing_regions` answers "on which such nodes does `judge` pass this image" by
asking the verdict itself: `compat.verdict.image_checks` runs once on a representative host
of every region of that space inside which no comparison the checks make can change its
answer. The regions are cut at every version the checks compare with (the toolkit table's
driver for the image's CUDA, its family's minor-version-compatibility floor, the image's own
min-driver label, every NVIDIA_REQUIRE_* value), and compute capabilities are grouped by how
the image's kernels cover them. So what a scheduler admits cannot drift from what verify
says: it is verify, asked once per region. A region passes only when the checks pass for
every GPU brand, since no label tells brands apart (forward compatibility through the
image's cuda-compat package runs only on some brands, and NVIDIA_REQUIRE_* may name brands).

The checks that read the rest of an audit (container runtime, CDI spec, ECC) describe a
host's state, not its labels; route excludes the hosts that fail the first two by host name,
from the fleet's audits (ECC errors are a warning, which excludes nothing).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuship import platforms
from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.compat.checks.arch import coverage
from gpuship.compat.checks.base import Status
from gpuship.compat.checks.devices import required_memory_mib
from gpuship.compat.checks.driver import stated_min_driver
from gpuship.compat.config import VerifyConfig
from gpuship.compat.container import ContainerReadings, DockerReading, SystemReading
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading, NvmlReadings
from gpuship.compat.verdict import image_checks
from gpuship.cuda.arch import ComputeCapability
from gpuship.cuda.drivers import forward_compat_brand, minor_compat_floor, native_driver_for
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.knowledge import knowledge_base
from gpuship.cuda.require import compared_values
from gpuship.cuda.version import Version
from gpuship.errors import LimitExceeded
from gpuship.limits import DEFAULT_LIMITS, Limits

# Versions as node labels hold them: a driver in three integer parts (a two-part driver such
# as 570.26 has an empty revision, which the verdict reads as 0), a CUDA version in two.
DRIVER_PARTS = 3
CUDA_PARTS = 2
# A compute capability's minor is one digit (cuda.arch.ComputeCapability reads no other).
MINORS = tuple(range(10))
Parts = tuple[int, ...]


@dataclass(frozen=True)
class VersionRange:
    """Versions v with low <= v < high, compared part by part (None: unbounded)."""

    low: Parts | None
    high: Parts | None


@dataclass(frozen=True)
class Capabilities:
    """Compute capabilities (major, minor): those listed, and when `beyond` is set every one
    whose major is above it (no kernel rule or target reaches there, so they all read alike)."""

    listed: frozenset[tuple[int, int]]
    beyond: int | None


@dataclass(frozen=True)
class Region:
    """Nodes whose driver, CUDA version and compute capability lie here pass the checks."""

    driver: VersionRange
    cuda: VersionRange
    capabilities: Capabilities


@dataclass(frozen=True)
class DeviceNeeds:
    """What `verify:` asks of a node's devices, as the device checks of `judge` count them:
    GPUs (MIG devices where MIG is on), the memory of each, and MIG on or off."""

    count: int
    memory_mib: int | None
    mig: str


def device_needs(config: VerifyConfig) -> DeviceNeeds:
    memory = None if config.min_memory_gib is None else required_memory_mib(config.min_memory_gib)
    return DeviceNeeds(count=config.gpus, memory_mib=memory, mig=config.mig)


def passing_regions(
    needs: ImageGpuNeeds,
    config: VerifyConfig,
    platform: str,
    max_verdicts: int = DEFAULT_LIMITS.regions_max_verdicts,
) -> tuple[Region, ...]:
    """Every region of nodes of `platform` (its CPU architecture) where the image's checks
    pass; () when none does. LimitExceeded, before any verdict runs, when that takes more
    than `max_verdicts` (each distinct NVIDIA_REQUIRE_* value an image sets adds cuts)."""
    drivers = _intervals(_driver_cuts(needs), DRIVER_PARTS)
    cudas = _intervals(_cuda_cuts(needs), CUDA_PARTS)
    classes, last = _capability_classes(needs)
    brands = _brands(needs)
    verdicts = len(drivers) * len(cudas) * len(classes) * len(brands)
    if verdicts > max_verdicts:
        raise LimitExceeded(
            needs.reference,
            f"placing it on {platform} nodes takes {verdicts} verdicts ({len(drivers)} driver "
            f"x {len(cudas)} CUDA ranges x {len(classes)} compute-capability groups x "
            f"{len(brands)} brands, cut by its labels and NVIDIA_REQUIRE_* values)",
            Limits.key("regions_max_verdicts"),
            max_verdicts,
        )
    machine = platforms.architecture(platform)
    passes = {
        (i, j, k): all(
            _passes(needs, config, machine, drivers[i][0], cudas[j][0], classes[k][0], brand)
            for brand in brands
        )
        for i, j, k in itertools.product(
            range(len(drivers)), range(len(cudas)), range(len(classes))
        )
    }
    admitted = {
        (i, j): frozenset(k for k in range(len(classes)) if passes[(i, j, k)])
        for i, j in itertools.product(range(len(drivers)), range(len(cudas)))
    }
    regions = []
    for rectangle, members in _cover(admitted, len(drivers), len(cudas)):
        (i_lo, i_hi), (j_lo, j_hi) = rectangle
        regions.append(
            Region(
                driver=VersionRange(drivers[i_lo][1].low, drivers[i_hi][1].high),
                cuda=VersionRange(cudas[j_lo][1].low, cudas[j_hi][1].high),
                capabilities=_capabilities([classes[k] for k in sorted(members)], last),
            )
        )
    return tuple(regions)


# -- where the checks can change their answer -------------------------------------------------


def _driver_cuts(needs: ImageGpuNeeds) -> list[str]:
    """Every driver version the driver and NVIDIA_REQUIRE_* checks compare with."""
    cuts = [str(v) for v in (_native(needs), stated_min_driver(needs)) if v is not None]
    if needs.cuda is not None:
        try:
            floor = minor_compat_floor(needs.cuda)
        except UnknownVersion:
            floor = None
        if floor is not None:
            cuts.append(str(floor))
    return cuts + list(compared_values(needs.env, "driver"))


def _native(needs: ImageGpuNeeds) -> Version | None:
    return native_driver_for(needs.cuda) if needs.cuda is not None else None


def _cuda_cuts(needs: ImageGpuNeeds) -> list[str]:
    """Every CUDA version the checks compare the driver's with: the image's release, and its
    major's first and the next major's first (minor-version compatibility stays in a major)."""
    cuts = list(compared_values(needs.env, "cuda"))
    if needs.cuda is not None:
        image = Version.parse(needs.cuda).major_minor()
        cuts += [str(image), f"{image.major}.0", f"{image.major + 1}.0"]
    return cuts


def _ceiling(text: str, size: int) -> Parts | None:
    """The least version of `size` integer parts that is >= `text` (None: not a version)."""
    try:
        parts = Version.parse(text).parts
    except InvalidVersion:
        return None
    head = (*parts[:size], *(0,) * max(0, size - len(parts)))
    if any(parts[size:]):
        head = (*head[:-1], head[-1] + 1)
    return head


def _intervals(cuts: Iterable[str], size: int) -> list[tuple[str, VersionRange]]:
    """The intervals between the cuts, each with a representative version. Each cut v and its
    successor bound one: a comparison with v (=, !=, <, <=, >, >=) reads the same inside each."""
    points: set[Parts] = set()
    for text in cuts:
        cut = _ceiling(text, size)
        if cut is not None:
            points.update((cut, (*cut[:-1], cut[-1] + 1)))
    ordered = sorted(points)
    zero: Parts = (0,) * size
    bounds: list[Parts | None] = [None, *ordered, None]
    intervals = []
    for low, high in itertools.pairwise(bounds):
        if low is None and high is not None and high <= zero:
            continue  # nothing lies below the lowest version
        sample = low if low is not None else zero
        intervals.append((".".join(map(str, sample)), VersionRange(low, high)))
    return intervals


# -- compute capabilities, grouped by how the image's kernels and requirements read them ------

CapabilityClass = tuple[str, tuple[tuple[int, int], ...], bool]  # sample, members, beyond


def _capability_classes(needs: ImageGpuNeeds) -> tuple[list[CapabilityClass], int]:
    """Compute capabilities grouped by the kernel coverage the arch check reads and by how they
    compare with each NVIDIA_REQUIRE_* `arch` value; one beyond every major anything names."""
    arch_values = [v for v in compared_values(needs.env, "arch") if _ceiling(v, 2) is not None]
    last = _last_major(needs, arch_values)
    points = [(major, minor) for major in range(last + 1) for minor in MINORS]
    groups: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    for point in [*points, (last + 1, 0)]:
        text = f"{point[0]}.{point[1]}"
        kind = coverage(text, needs)[0].kind if needs.arch_targets is not None else None
        order = tuple(_compare(Version.parse(text), Version.parse(v)) for v in arch_values)
        groups.setdefault((kind, order), []).append(point)
    classes = []
    for members in groups.values():
        beyond = (last + 1, 0) in members
        listed = tuple(p for p in members if p != (last + 1, 0))
        sample = members[0]
        classes.append((f"{sample[0]}.{sample[1]}", listed, beyond))
    return classes, last


def _last_major(needs: ImageGpuNeeds, arch_values: Sequence[str]) -> int:
    """The highest compute capability major the kernel rules, the image or its requirements
    name: above it, every capability reads alike."""
    kb = knowledge_base()
    named = [row.compute_capability for row in kb.gpus]
    for rule in kb.binary_compat.rules:
        named += [rule.code, rule.min, rule.below, *rule.also, *rule.except_]
    majors = [ComputeCapability.parse(text).major for text in named]
    targets = list(needs.arch_targets or ())
    targets += [t for _, library in needs.library_targets for t in library]
    majors += [target.cc.major for target in targets]
    majors += [parts[0] for v in arch_values if (parts := _ceiling(v, 2)) is not None]
    return max(majors)


def _compare(left: Version, right: Version) -> int:
    return (left > right) - (left < right)


def _capabilities(classes: Sequence[CapabilityClass], last: int) -> Capabilities:
    listed = frozenset(p for _, members, _ in classes for p in members)
    beyond = any(is_beyond for _, _, is_beyond in classes)
    return Capabilities(listed, last if beyond else None)


# -- the representative host ------------------------------------------------------------------


def _brands(needs: ImageGpuNeeds) -> list[str]:
    """One GPU brand per way the checks can read a brand: allowed forward compatibility or
    not, and equal to each brand an NVIDIA_REQUIRE_* value names or not."""
    named = list(compared_values(needs.env, "brand"))
    kb = knowledge_base()
    candidates = [*kb.brands.names, *kb.forward_compat.brands, *named, "gpuship-other-brand"]
    seen: dict[tuple[object, ...], str] = {}
    for brand in candidates:
        key = (forward_compat_brand(brand), *(brand.lower() == n.lower() for n in named))
        seen.setdefault(key, brand)
    return list(seen.values())


def _passes(
    needs: ImageGpuNeeds,
    config: VerifyConfig,
    machine: str,
    driver: str,
    cuda: str,
    capability: str,
    brand: str,
) -> bool:
    audit = _host(machine, driver, cuda, capability, brand)
    checks = image_checks(audit, audit.nvml.gpus, needs, config)
    return all(check.status is not Status.FAIL for check in checks)


def _host(machine: str, driver: str, cuda: str, capability: str, brand: str) -> HostAudit:
    """A host that reads like every node of the region (the image checks read nothing else)."""
    gpu = GpuReading(
        index=0,
        name="GPU",
        uuid="GPU-0",
        brand=brand,
        compute_capability=capability,
        memory_total_bytes=0,
    )
    return HostAudit(
        taken_at="1970-01-01T00:00:00+00:00",
        runner=RunnerIdentity(hostname="node"),
        system=SystemReading(kernel="", machine=machine),
        nvml=NvmlReadings(driver_version=driver, cuda_driver_version=cuda, gpus=[gpu]),
        container=ContainerReadings(docker=DockerReading(reachable=False)),
    )


# -- the passing cells as few rectangles ------------------------------------------------------

Cell = tuple[int, int]
Rectangle = tuple[tuple[int, int], tuple[int, int]]


def _cover(
    admitted: dict[Cell, frozenset[int]], rows: int, columns: int
) -> list[tuple[Rectangle, frozenset[int]]]:
    """Rectangles of (driver interval, CUDA interval) cells, each with the capability classes
    that pass in all of its cells, together covering every (cell, class) that passes. Each
    grows as far as it can, so a driver floor that holds for every CUDA version is one
    rectangle, not one per CUDA interval; one inside another that adds no class is dropped."""
    uncovered = {(cell, k) for cell, members in admitted.items() for k in members}
    found: list[tuple[Rectangle, frozenset[int]]] = []
    while uncovered:
        cell, k = min(uncovered)
        inside = {c for c, members in admitted.items() if k in members}
        options = [_grow(cell, inside, rows, columns, first) for first in (0, 1)]
        rectangle = max(options, key=_area)
        members = frozenset.intersection(*(admitted[c] for c in _cells(rectangle)))
        found.append((rectangle, members))
        uncovered -= {(c, m) for c in _cells(rectangle) for m in members}
    return [
        entry
        for index, entry in enumerate(found)
        if not any(
            _within(entry, other) and (not _within(other, entry) or other_index < index)
            for other_index, other in enumerate(found)
            if other_index != index
        )
    ]


def _grow(cell: Cell, inside: set[Cell], rows: int, columns: int, first: int) -> Rectangle:
    """The rectangle from `cell` grown along axis `first` (0: drivers, 1: CUDA versions), then
    along the other, as far as every cell stays inside."""
    spans = [[cell[0], cell[0]], [cell[1], cell[1]]]
    limits = (rows, columns)
    for axis in (first, 1 - first):
        for step in (-1, 1):
            while True:
                trial = [list(span) for span in spans]
                edge = 0 if step < 0 else 1
                trial[axis][edge] += step
                if not 0 <= trial[axis][edge] < limits[axis]:
                    break
                candidate = ((trial[0][0], trial[0][1]), (trial[1][0], trial[1][1]))
                if not all(c in inside for c in _cells(candidate)):
                    break
                spans = trial
    return (spans[0][0], spans[0][1]), (spans[1][0], spans[1][1])


def _cells(rectangle: Rectangle) -> list[Cell]:
    (i_lo, i_hi), (j_lo, j_hi) = rectangle
    return [(i, j) for i in range(i_lo, i_hi + 1) for j in range(j_lo, j_hi + 1)]


def _area(rectangle: Rectangle) -> int:
    return len(_cells(rectangle))


def _within(
    inner: tuple[Rectangle, frozenset[int]], outer: tuple[Rectangle, frozenset[int]]
) -> bool:
    ((a_lo, a_hi), (b_lo, b_hi)), members = inner
    ((c_lo, c_hi), (d_lo, d_hi)), more = outer
    return c_lo <= a_lo and a_hi <= c_hi and d_lo <= b_lo and b_hi <= d_hi and members <= more
