"""Fleet view: many host audits x many images -> who can run what, and what to change.

Pure on data: audits (from `gpuship audit` on each runner) and image needs (from the
registry or a build matrix) go in, a compatibility grid with the reasons comes out.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Status
from gpuship.compat.checks.driver import native_driver
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.verdict import Verdict, judge, judged_reading
from gpuship.cuda.version import Version
from gpuship.errors import InputError


@dataclass(frozen=True)
class FleetCell:
    """One image on one runner."""

    image: str
    runner: str
    verdict: Verdict


@dataclass(frozen=True)
class Fleet:
    """The grid and what follows from it."""

    runners: tuple[str, ...]
    images: tuple[str, ...]
    cells: tuple[FleetCell, ...]
    oldest_driver: str
    driver_for_all_images: str | None
    driver_unknown_for: tuple[str, ...]

    @functools.cached_property
    def _failing(self) -> frozenset[tuple[str, str]]:
        # (image, runner) pairs whose verdict fails, read once: the report asks per pair.
        return frozenset((c.image, c.runner) for c in self.cells if c.verdict.status is Status.FAIL)

    def cell(self, image: str, runner: str) -> FleetCell:
        return self._by_pair[(image, runner)]

    @functools.cached_property
    def _by_pair(self) -> dict[tuple[str, str], FleetCell]:
        return {(c.image, c.runner): c for c in self.cells}

    def runnable_on(self, image: str) -> tuple[str, ...]:
        """Runners where the image passes (ok or warn)."""
        return tuple(r for r in self.runners if (image, r) not in self._failing)

    @functools.cached_property
    def unrunnable_images(self) -> tuple[str, ...]:
        return tuple(image for image in self.images if not self.runnable_on(image))

    def exclusions(self) -> dict[str, tuple[str, ...]]:
        """Image -> runners it must not be scheduled on."""
        return {
            image: tuple(r for r in self.runners if (image, r) in self._failing)
            for image in self.images
        }

    @property
    def useless_runners(self) -> tuple[str, ...]:
        """Runners that can run none of the images."""
        return tuple(r for r in self.runners if all((i, r) in self._failing for i in self.images))


def runner_names(audits: Sequence[HostAudit]) -> list[str]:
    """Display names, made unique with the hostname when two audits share labels."""
    names = [audit.runner.display_name for audit in audits]
    return [
        f"{name} ({audit.runner.hostname})" if names.count(name) > 1 else name
        for name, audit in zip(names, audits, strict=True)
    ]


def build_fleet(
    audits: Sequence[HostAudit], images: Sequence[ImageGpuNeeds], config: VerifyConfig
) -> Fleet:
    """Judge every image on every runner."""
    if not audits:
        raise InputError("fleet: give at least one audit file")
    if not images:
        raise InputError("fleet: give at least one --image or a --matrix with cells")
    runners = runner_names(audits)
    readings = [judged_reading(audit, config) for audit in audits]
    cells: list[FleetCell] = []
    for needs in images:
        judged: dict[str, Verdict] = {}  # runners that read alike get one verdict
        for runner, audit, reading in zip(runners, audits, readings, strict=True):
            if reading not in judged:
                judged[reading] = judge(audit, needs, config)
            cells.append(FleetCell(needs.reference, runner, judged[reading]))
    oldest = min(Version.parse(a.nvml.driver_version) for a in audits)
    required: list[Version] = []
    unknown: list[str] = []
    for needs in images:
        minimum = native_driver(needs)
        if minimum is None:
            unknown.append(needs.reference)
        else:
            required.append(minimum)
    return Fleet(
        runners=tuple(runners),
        images=tuple(n.reference for n in images),
        cells=tuple(cells),
        oldest_driver=str(oldest),
        driver_for_all_images=str(max(required)) if required else None,
        driver_unknown_for=tuple(unknown),
    )
