"""CUDA release -> driver requirements, and whether a host driver can run an image's CUDA.

Rules (cuda-compat.md §1): a driver runs CUDA X.Y fully when its CUDA version is >= X.Y
(Table 3); within the same major it runs with caveats from the family floor on (minor version
compatibility); datacenter-class GPUs can run newer CUDA through the image's `cuda-compat`
package (forward compatibility). Everything else cannot run.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.version import Version, as_version

if TYPE_CHECKING:
    from gpuship.cuda.knowledge import DriverBranchRow, FamilyRow

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).


@dataclass(frozen=True)
class ToolkitRelease:
    """A CUDA toolkit release and the minimum Linux driver NVIDIA lists for it."""

    version: Version
    label: str
    min_driver: Version
    prerelease: bool
    source: str


@functools.cache
def _releases() -> tuple[ToolkitRelease, ...]:
    from gpuship.cuda.knowledge import knowledge_base

    rows = knowledge_base().toolkits
    return tuple(
        sorted(
            (
                ToolkitRelease(
                    Version.parse(r.version),
                    r.label,
                    Version.parse(r.min_driver),
                    r.prerelease,
                    r.source,
                )
                for r in rows
            ),
            key=lambda r: r.version,
        )
    )


def known_cuda_releases() -> tuple[Version, ...]:
    """Every CUDA major.minor in the toolkit table, ascending."""
    seen: list[Version] = []
    for release in _releases():
        mm = release.version.major_minor()
        if mm not in seen:
            seen.append(mm)
    return tuple(seen)


def toolkit_release(cuda: str | Version) -> ToolkitRelease:
    """The Table 3 row for `cuda`.

    "12.4" (major.minor) means the GA release (the first driver that reports CUDA 12.4);
    "12.4.1" means that exact update. A version not in the table raises UnknownVersion.
    """
    return _toolkit_release(str(as_version(cuda, "CUDA version")))


# Routing judges thousands of host x image pairs against the same few CUDA releases.
@functools.cache
def _toolkit_release(text: str) -> ToolkitRelease:
    version = Version.parse(text)
    releases = _releases()
    if len(version.parts) <= 2:
        same_minor = [
            r for r in releases if r.version.major_minor() == version and not r.prerelease
        ]
        if same_minor:
            return same_minor[0]
    else:
        for release in releases:
            if release.version == version:
                return release
    raise UnknownVersion("cuda", str(version), "no minimum driver recorded for this release")


def min_driver_for(cuda: str | Version) -> Version:
    """Minimum Linux driver for CUDA `cuda` (Table 3). Unknown releases raise UnknownVersion."""
    return toolkit_release(cuda).min_driver


def native_driver_for(cuda: str | Version) -> Version | None:
    """The oldest driver that runs CUDA `cuda` without a compatibility mode, as the verdict
    judges it: the GA driver of its major.minor (a driver whose CUDA version is 12.4 runs every
    12.4 update; Table 3's later update rows name the driver packaged with that update). None:
    the release is not in the table (its family floor and the driver's CUDA version decide)."""
    try:
        return min_driver_for(as_version(cuda, "CUDA version").major_minor())
    except UnknownVersion:
        return None


def _family(major: int) -> FamilyRow:
    from gpuship.cuda.knowledge import knowledge_base

    for row in knowledge_base().minor_compat.families:
        if row.major == major:
            return row
    raise UnknownVersion("cuda", str(major), "no minor-version-compatibility data for this major")


def minor_compat_floor(cuda: str | Version) -> Version | None:
    """Lowest driver that runs any CUDA of this major family through minor version compatibility.

    Every minor of a known family gets the family floor, even a minor not yet in the toolkit
    table: NVIDIA states the floor per family (11.x >= 450.80.02, 12.x >= 525.60.13,
    13.x >= 580). None: the family has no minor version compatibility (10.x). An unknown major
    raises UnknownVersion.
    """
    floor = _family(as_version(cuda, "CUDA version").major).floor
    return Version.parse(floor) if floor else None


def cuda_for_driver(driver: str | Version) -> Version | None:
    """Highest known CUDA major.minor whose GA minimum driver is <= `driver`.

    A lower bound: a driver newer than every table row may support CUDA releases not listed.
    None when the driver is older than every listed release.
    """
    version = as_version(driver, "driver version")
    best: Version | None = None
    for release in _releases():
        if not release.prerelease and release.min_driver <= version:
            mm = release.version.major_minor()
            if best is None or mm > best:
                best = mm
    return best


def dropped_generation(branch: int, compute_capability: str) -> DriverBranchRow | None:
    """The GPU generation of `compute_capability` when driver `branch` no longer supports it
    (a branch after the generation's last); None when it does, or the generation is not known
    to be dropped."""
    from gpuship.cuda.knowledge import knowledge_base

    capability = as_version(compute_capability, "compute capability")
    for row in knowledge_base().driver_branches:
        if branch > row.last_branch and any(
            as_version(cc, "compute capability") == capability for cc in row.compute_capabilities
        ):
            return row
    return None


def forward_compat_brand(brand: str | None) -> bool:
    """Whether a GPU of this libnvidia-container brand may use `cuda-compat` forward compat."""
    from gpuship.cuda.knowledge import knowledge_base

    if brand is None:
        return False
    allowed = {b.lower() for b in knowledge_base().forward_compat.brands}
    return brand.lower() in allowed


_COMPAT_PACKAGE = re.compile(r"cuda-compat-([0-9]+)-([0-9]+)")


def compat_cuda_from_package(name: str) -> Version | None:
    """`cuda-compat-12-4` (NV_CUDA_COMPAT_PACKAGE) -> 12.4; None if it is not that shape."""
    match = _COMPAT_PACKAGE.fullmatch(name.strip())
    if not match:
        return None
    return Version.parse(f"{match.group(1)}.{match.group(2)}")


class Compatibility(str, enum.Enum):
    """Can this host driver run an image built for a given CUDA?"""

    OK = "ok"
    MINOR_COMPAT = "minor-compat"
    FORWARD_COMPAT = "forward-compat"
    NO = "no"


@dataclass(frozen=True)
class DriverVerdict:
    """The outcome of `driver_verdict`, with a reason and a fix for people."""

    status: Compatibility
    image_cuda: Version
    host_driver: Version
    host_cuda: Version | None
    required_driver: Version | None
    floor: Version | None
    reason: str
    fix: str

    @property
    def ok(self) -> bool:
        return self.status is not Compatibility.NO

    @property
    def warning(self) -> bool:
        return self.status in (Compatibility.MINOR_COMPAT, Compatibility.FORWARD_COMPAT)


def driver_verdict(
    image_cuda: str | Version,
    driver: str | Version,
    *,
    host_cuda: str | Version | None = None,
    brand: str | None = None,
    compat_cuda: str | Version | None = None,
) -> DriverVerdict:
    """Decide whether a host with `driver` (NVML CUDA version `host_cuda`) runs `image_cuda`.

    `brand` is the GPU's libnvidia-container brand; `compat_cuda` the CUDA version of the
    `cuda-compat` package shipped in the image (None if absent). A minor release missing from
    the toolkit table is still judged from the NVML CUDA version and the family floor
    (`required_driver` is then None); an unknown major raises UnknownVersion.
    """
    return _driver_verdict(
        str(image_cuda),
        str(driver),
        None if host_cuda is None else str(host_cuda),
        brand,
        None if compat_cuda is None else str(compat_cuda),
    )


# `route` and `fleet` ask the same few (driver, CUDA) questions for every host and image: 2,500
# pairs of a 50 x 50 fleet come down to a few dozen. Keyed by the versions' spelling, so a
# cached verdict's messages read exactly as a fresh one's would.
@functools.lru_cache(maxsize=4096)
def _driver_verdict(
    image_cuda: str,
    driver: str,
    host_cuda: str | None,
    brand: str | None,
    compat_cuda: str | None,
) -> DriverVerdict:
    image = as_version(image_cuda, "CUDA version").major_minor()
    host_driver = as_version(driver, "driver version")
    floor = minor_compat_floor(image)
    required = native_driver_for(image)
    host = (
        as_version(host_cuda, "CUDA version").major_minor()
        if host_cuda is not None
        else cuda_for_driver(host_driver)
    )
    compat = as_version(compat_cuda, "CUDA version").major_minor() if compat_cuda else None

    def verdict(status: Compatibility, reason: str, fix: str = "") -> DriverVerdict:
        return DriverVerdict(status, image, host_driver, host, required, floor, reason, fix)

    upgrade = (
        f"install driver >= {required} (CUDA {image})"
        if required
        else f"install a driver that supports CUDA {image}"
    )
    host_text = f"driver {host_driver} (CUDA {host})" if host else f"driver {host_driver}"
    if host is not None and host >= image:
        return verdict(Compatibility.OK, f"{host_text} supports CUDA {image}")
    if required is not None and host_driver >= required:
        # NVML reported an older CUDA than the table implies; trust the driver version.
        return verdict(Compatibility.OK, f"driver {host_driver} >= {required} (CUDA {image})")
    if (
        floor is not None
        and host is not None
        and host.major == image.major
        and host_driver >= floor
    ):
        return verdict(
            Compatibility.MINOR_COMPAT,
            f"{host_text} is older than CUDA {image} but >= the {image.major}.x "
            f"minor-compatibility floor {floor}: runs with limited features, and PTX JIT "
            "(torch.compile/Triton, NVRTC, PTX-only kernels) may fail",
            upgrade,
        )
    if compat is not None and compat >= image and forward_compat_brand(brand):
        return verdict(
            Compatibility.FORWARD_COMPAT,
            f"{host_text} is older than CUDA {image}; the image's cuda-compat {compat} "
            f"can run it on a {brand} GPU (forward compatibility)",
            upgrade,
        )
    needs = f"driver >= {required}" if required else f"a driver supporting CUDA {image}"
    reason = f"{host_text} cannot run CUDA {image}: needs {needs}"
    if compat is not None and compat >= image and not forward_compat_brand(brand):
        reason += (
            f"; forward compatibility through cuda-compat is not available on "
            f"{brand or 'this'} GPUs (error 804)"
        )
    return verdict(Compatibility.NO, reason, upgrade)
