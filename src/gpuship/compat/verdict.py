"""The verdict: can this host (an audit) run this image (its GPU needs) under this config?

A pure function on data. Each check (`compat/checks/`, one module per group of rules) yields
one or more `Check`s, per GPU where it matters, and every failing check says what to change:
the driver to install, the image variant that would run here, or to exclude this runner
label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks import arch, cdi, devices, driver, platform, require, runtime
from gpuship.compat.checks.base import Check, Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading
from gpuship.errors import InputError


@dataclass(frozen=True)
class Verdict:
    """All checks for one host x image; `status` is the worst of them."""

    checks: tuple[Check, ...]

    @property
    def status(self) -> Status:
        worst = max((check.status.rank for check in self.checks), default=0)
        return {0: Status.OK, 1: Status.WARN, 2: Status.FAIL}[worst]

    @property
    def reason(self) -> str:
        """The first failing (else warning) check, as one line for tables and outputs."""
        for level in (Status.FAIL, Status.WARN):
            for check in self.checks:
                if check.status is level:
                    return f"{check.subject}: {check.message}"
        return ""


def select_gpus(gpus: Sequence[GpuReading], selection: Sequence[str]) -> list[GpuReading]:
    """The GPUs the job gets: all, or those named by index or UUID (like `--gpus device=`)."""
    if not selection:
        return list(gpus)
    chosen = []
    for item in selection:
        match = next((g for g in gpus if item in {str(g.index), g.uuid}), None)
        if match is None:
            known = ", ".join(f"{g.index} ({g.uuid})" for g in gpus)
            raise InputError(f"--gpu {item}: no such GPU on this host (GPUs: {known})")
        chosen.append(match)
    return chosen


def judge(
    audit: HostAudit,
    needs: ImageGpuNeeds | None,
    config: VerifyConfig,
    selection: Sequence[str] = (),
) -> Verdict:
    """Every check of the verdict (verify, fleet, route) for one host and (optionally) one image."""
    gpus = select_gpus(audit.nvml.gpus, selection)
    checks = [runtime.check(audit, config), *cdi.checks(audit), *devices.checks(gpus, config)]
    if needs is not None:
        checks.extend(image_checks(audit, gpus, needs, config))
    return Verdict(tuple(checks))


def image_checks(
    audit: HostAudit, gpus: Sequence[GpuReading], needs: ImageGpuNeeds, config: VerifyConfig
) -> list[Check]:
    """The checks of `judge` that depend on the image: platform, NVIDIA_REQUIRE_*, driver and
    GPU architectures. They read the host's CPU architecture, driver version, the CUDA version
    it reports and each GPU's brand and compute capability, nothing else (compat.regions relies
    on it to ask them once per kind of Kubernetes node)."""
    checks = []
    on_platform = platform.check(audit, needs)
    if on_platform is not None:
        checks.append(on_platform)
    if needs.missing_platform is not None:  # nothing of the image was read
        return checks
    checks.extend(require.checks(audit, gpus, needs))
    driver_verdicts = driver.verdicts(audit, gpus, needs)
    checks.extend(driver.checks(audit, gpus, needs, driver_verdicts, config))
    checks.extend(arch.checks(audit, gpus, needs, driver_verdicts, config))
    return checks


def judged_reading(audit: HostAudit, config: VerifyConfig) -> str:
    """What `judge` (with no GPU selection) reads of `audit`, as a key: audits with the same
    key get the same verdict for any image under `config`.

    Left out is what no check reads and what differs on every host of a pool: who took the
    audit and when, each GPU's UUID, PCI address and brand number, each MIG device's UUID, the
    kernel and OS name, the NVML library version, the readiness readings and cgroup driver
    (judged by verify alone, per host), and free memory unless
    `verify.min-free-memory-gib` asks for it. So a fleet judges each distinct kind of host
    once per image, not each host (`tests/unit/compat/test_compat_judged_reading.py` checks
    that changing only these never changes a verdict).
    """
    gpu: dict[str, Any] = {
        "uuid": True,
        "pci_bus_id": True,
        "brand_code": True,
        "mig_devices": {"__all__": {"uuid"}},
    }
    if config.min_free_memory_gib is None:
        gpu["memory_free_bytes"] = True
    exclude: dict[str, Any] = {
        "runner": True,
        "taken_at": True,
        "tool_version": True,
        "system": {"kernel", "os"},
        "nvml": {"nvml_version": True, "gpus": {"__all__": gpu}},
        # How the host restarts and reloads (the verify stage's readiness rules), not what
        # an image needs; its running containers differ on every host.
        "container": {"readiness": True, "docker": {"cgroup_driver", "cgroup_version"}},
    }
    return audit.model_dump_json(exclude=exclude)
