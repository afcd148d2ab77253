"""The verdict: can this host (an audit) run this image (its GPU needs) under this config?

A pure function on data. Each check yields one or more `Check`s, per GPU where it matters,
and every failing check says what to change: the driver to install, the image variant that
would run here, or to exclude this runner label.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuship import platforms
from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading
from gpuship.cuda.arch import Coverage, CoverageKind, kernel_coverage
from gpuship.cuda.drivers import (
    Compatibility,
    DriverVerdict,
    driver_verdict,
    min_driver_for,
    native_driver_for,
)
from gpuship.cuda.errors import InvalidRequirement, UnknownVersion
from gpuship.cuda.require import GpuDevice, HostFacts, RequireFailure, evaluate_requirements
from gpuship.cuda.version import Version
from gpuship.errors import InputError

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
    checks = [_runtime_check(audit, config)]
    checks.extend(_cdi_checks(audit))
    checks.extend(_device_checks(gpus, config))
    checks.extend(_ecc_checks(gpus))
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
    platform = _platform_check(audit, needs)
    if platform is not None:
        checks.append(platform)
    if needs.missing_platform is not None:  # nothing of the image was read
        return checks
    checks.extend(_require_checks(audit, gpus, needs))
    driver_verdicts = {gpu.index: _driver_verdict(audit, gpu, needs) for gpu in gpus}
    checks.extend(_driver_checks(audit, gpus, needs, driver_verdicts, config))
    checks.extend(_arch_checks(audit, gpus, needs, driver_verdicts, config))
    return checks


def stated_min_driver(needs: ImageGpuNeeds) -> Version | None:
    """The image's `io.gpuship.min-driver` label where it asks more than its CUDA does.

    The matrix writes the toolkit table's driver for the cell's exact CUDA release there; a
    label at or below that states nothing the CUDA verdict (with its compatibility modes) does
    not already judge. A higher one (a cell or a `labels:` template that raises it for a
    library needing a newer driver) is a requirement of its own, and so is any label on an
    image whose CUDA is unknown to the knowledge base or not stated.
    """
    if not needs.min_driver:
        return None
    stated = Version.parse(needs.min_driver)
    if needs.cuda is None:
        return stated
    for cuda in (needs.cuda, str(Version.parse(needs.cuda).major_minor())):
        try:
            listed = min_driver_for(cuda)
        except UnknownVersion:
            continue
        return stated if stated > listed else None
    return stated


def native_driver(needs: ImageGpuNeeds) -> Version | None:
    """The oldest driver on which the image passes without a compatibility mode: the toolkit
    table's driver for its CUDA release as the verdict judges it, raised to its min-driver label
    where that asks more. None: unknown (no CUDA stated, or a release the table lacks)."""
    table = native_driver_for(needs.cuda) if needs.cuda is not None else None
    candidates = [v for v in (stated_min_driver(needs), table) if v is not None]
    return max(candidates) if candidates else None


def judged_reading(audit: HostAudit, config: VerifyConfig) -> str:
    """What `judge` (with no GPU selection) reads of `audit`, as a key: audits with the same
    key get the same verdict for any image under `config`.

    Left out is what no check reads and what differs on every host of a pool: who took the
    audit and when, each GPU's UUID, PCI address and brand number, each MIG device's UUID, the
    kernel and OS name, the NVML library version, the readiness readings and cgroup driver
    (judged by verify alone, per host), and free memory unless
    `verify.min-free-memory-gib` asks for it. So a fleet judges each distinct kind of host
    once per image, not each host (`tests/unit/verify/test_verify_judged_reading.py` checks
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


def _platform_check(audit: HostAudit, needs: ImageGpuNeeds) -> Check | None:
    """The image's platform against the host's CPU, as Docker would pick and run it (None:
    needs that did not come from an image's config, such as a fleet's table)."""
    host = platforms.host_platform(audit.system.machine)
    if needs.missing_platform is not None:
        has = ", ".join(needs.platforms) or "none"
        message = f"image has no {needs.missing_platform} variant (it has: {has})"
        return Check(rules.PLATFORM, Status.FAIL, "image", message)
    if needs.platform is None:
        return None
    if platforms.architecture(needs.platform) != platforms.architecture(host):
        message = f"image is {needs.platform}; this host runs {host} ({audit.system.machine})"
        return Check(rules.PLATFORM, Status.FAIL, "image", message)
    return Check(rules.PLATFORM, Status.OK, "image", f"{needs.platform} runs on {host}")


_COVERAGE_RANK = {CoverageKind.NONE: 0, CoverageKind.PTX_JIT: 1, CoverageKind.SASS: 2}


def coverage(cc: str, needs: ImageGpuNeeds) -> tuple[Coverage, tuple[str, ...]]:
    """How well the least-covered GPU library serves a GPU of capability `cc`, and which
    libraries are that bad.

    Without a per-library scan (the arch-list label), the stated list is judged as a whole.
    """
    if not needs.library_targets:
        return kernel_coverage(cc, needs.arch_targets or ()), ()
    per_library = [(path, kernel_coverage(cc, targets)) for path, targets in needs.library_targets]
    worst = min((coverage for _, coverage in per_library), key=lambda c: _COVERAGE_RANK[c.kind])
    if worst.kind is CoverageKind.SASS:
        return worst, ()
    return worst, tuple(path for path, coverage in per_library if coverage.kind is worst.kind)


def _subject(gpu: GpuReading) -> str:
    return f"GPU {gpu.index} ({gpu.name})"


# -- container runtime ------------------------------------------------------------------------


def _runtime_check(audit: HostAudit, config: VerifyConfig) -> Check:
    container = audit.container
    docker = container.docker
    if not config.require_gpu_runtime:
        return Check(
            rules.RUNTIME, Status.SKIP, "host", "not required (verify.require-gpu-runtime)"
        )
    ways = []
    if container.nvidia_runtime:
        runtimes = ", ".join(r for r in docker.runtimes if r.startswith("nvidia"))
        ways.append(f"Docker runtime {runtimes} (default: {docker.default_runtime})")
    hook = container.tool("nvidia-container-runtime-hook")
    if hook is not None and hook.path:
        ways.append("nvidia-container-runtime-hook on PATH (docker --gpus)")
    cdi = container.gpu_cdi_devices
    if cdi:
        ways.append(f"CDI devices {', '.join(cdi[:4])}{' ...' if len(cdi) > 4 else ''}")
    # CDI is the only way here, and the engine reports no CDI spec dirs: it does not use CDI
    # (Docker < 25, or the 'cdi' feature off), so `--device nvidia.com/gpu=...` is refused.
    if cdi and len(ways) == 1 and docker.reachable and not docker.cdi_spec_dirs:
        return Check(
            rules.RUNTIME,
            Status.WARN,
            "host",
            f"NVIDIA CDI devices exist ({', '.join(cdi[:4])}) but Docker "
            f"{docker.server_version or ''} reports no CDI spec dirs: it does not use CDI, so "
            "only a CDI-aware runtime (podman, containerd, nvidia-container-runtime) reaches them",
            fix="enable CDI in /etc/docker/daemon.json ('features': {'cdi': true}, Docker >= 25) "
            "or run 'nvidia-ctk runtime configure --runtime=docker' and restart the engine",
        )
    if ways and docker.reachable:
        return Check(
            rules.RUNTIME, Status.OK, "host", "GPUs reach containers through " + "; ".join(ways)
        )
    if ways:
        return Check(
            rules.RUNTIME,
            Status.WARN,
            "host",
            f"Docker engine not reachable ({docker.error}); GPU plumbing present: "
            + "; ".join(ways),
            fix="start the Docker engine or give the runner access to its socket",
        )
    setup = (
        "install nvidia-container-toolkit and run 'nvidia-ctk runtime configure --runtime=docker' "
        "(or 'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml' with CDI enabled), then "
        f"restart the engine, {EXCLUDE_RUNNER}"
    )
    if not docker.reachable:
        message = (
            f"Docker engine not reachable ({docker.error}) and no NVIDIA runtime, runtime hook "
            "or CDI spec: a container here gets no GPU"
        )
    else:
        runtimes = ", ".join(docker.runtimes) or "none"
        message = (
            f"GPUs cannot reach containers: Docker runtimes are [{runtimes}], no "
            "nvidia-container-runtime-hook on PATH and no NVIDIA CDI spec; the job would run "
            'on the CPU or fail with \'could not select device driver "" with capabilities: '
            "[[gpu]]'"
        )
    return Check(rules.RUNTIME, Status.FAIL, "host", message, fix=setup)


# -- CDI spec: generated for this driver, regenerated at boot -------------------------------

# tmpfs on every systemd host: a spec there was written since the last boot.
_VOLATILE_DIRS = ("/run/", "/var/run/")


def _cdi_checks(audit: HostAudit) -> list[Check]:
    container = audit.container
    driver = audit.nvml.driver_version
    specs = [
        spec
        for spec in container.cdi_specs
        if spec.kind and spec.kind.startswith("nvidia.com/") and spec.driver_versions
    ]
    checks = []
    for spec in specs:
        named = ", ".join(spec.driver_versions)
        if spec.driver_versions != [driver]:
            checks.append(
                Check(
                    rules.CDI_SPEC,
                    Status.FAIL,
                    "host",
                    f"CDI spec {spec.path} was generated for driver {named} but driver {driver} "
                    "is loaded: every container given GPUs through CDI fails to start (its "
                    "mounts name driver libraries that no longer exist)",
                    fix=f"regenerate it with 'sudo nvidia-ctk cdi generate --output={spec.path}' "
                    f"and enable regeneration at boot ({_REFRESH_FIX}), {EXCLUDE_RUNNER}",
                )
            )
        else:
            checks.append(
                Check(
                    rules.CDI_SPEC,
                    Status.OK,
                    "host",
                    f"CDI spec {spec.path} was generated for the loaded driver {driver}",
                )
            )
    lasting = [s.path for s in specs if not s.path.startswith(_VOLATILE_DIRS)]
    units = container.cdi_refresh_units
    if lasting and units is not None and not any(unit.enabled for unit in units):
        checks.append(
            Check(
                rules.CDI_SPEC,
                Status.WARN,
                "host",
                f"nothing regenerates {', '.join(lasting)} at boot (no enabled "
                "nvidia-cdi-refresh.service or unit running 'nvidia-ctk cdi generate'): after the "
                "next driver update and reboot it names the old driver and GPU containers fail",
                fix=_REFRESH_FIX,
            )
        )
    return checks


_REFRESH_FIX = (
    "'sudo systemctl enable --now nvidia-cdi-refresh.path nvidia-cdi-refresh.service' "
    "(NVIDIA Container Toolkit >= 1.18.0), or a unit that runs 'nvidia-ctk cdi generate' at boot"
)


# -- devices: MIG, count, memory ------------------------------------------------------------


def _device_checks(gpus: Sequence[GpuReading], config: VerifyConfig) -> list[Check]:
    checks: list[Check] = []
    usable = 0
    for gpu in gpus:
        subject = _subject(gpu)
        if gpu.mig_enabled:
            if config.mig == "forbid":
                checks.append(
                    Check(
                        rules.MIG,
                        Status.FAIL,
                        subject,
                        "MIG mode is enabled but verify.mig forbids MIG",
                        fix=f"disable MIG with 'nvidia-smi -i {gpu.index} -mig 0', "
                        + EXCLUDE_RUNNER,
                    )
                )
                continue
            if not gpu.mig_devices:
                checks.append(
                    Check(
                        rules.MIG,
                        Status.WARN,
                        subject,
                        "MIG mode is enabled but no MIG device exists: CUDA sees no device here",
                        fix="create instances ('nvidia-smi mig -cgi <profile> -C') or disable MIG",
                    )
                )
                continue
            checks.append(
                Check(
                    rules.MIG,
                    Status.OK,
                    subject,
                    f"MIG enabled with {len(gpu.mig_devices)} MIG device(s)",
                )
            )
            usable += len(gpu.mig_devices)
            checks.extend(_memory_checks(gpu, config, mig=True))
        elif config.mig == "require":
            checks.append(
                Check(
                    rules.MIG,
                    Status.FAIL,
                    subject,
                    "verify.mig requires MIG devices but MIG mode is disabled on this GPU",
                    fix=f"enable MIG with 'nvidia-smi -i {gpu.index} -mig 1' and create instances, "
                    + EXCLUDE_RUNNER,
                )
            )
        else:
            usable += 1
            checks.extend(_memory_checks(gpu, config, mig=False))
    if any(g.mig_enabled for g in gpus):
        noun = "MIG device or GPU" if usable == 1 else "MIG devices or GPUs"
    else:
        noun = "GPU" if usable == 1 else "GPUs"
    if usable < config.gpus:
        checks.append(
            Check(
                rules.DEVICES,
                Status.FAIL,
                "host",
                f"the job needs {config.gpus} GPU(s) (verify.gpus) but this host offers "
                f"{usable} usable {noun}",
                fix=f"run the job on a runner with {config.gpus} GPU(s), {EXCLUDE_RUNNER}",
            )
        )
    else:
        checks.append(
            Check(rules.DEVICES, Status.OK, "host", f"{usable} usable {noun}, {config.gpus} needed")
        )
    return checks


def memory_mib(total_bytes: int) -> int:
    """Memory in whole MiB, the unit NVML's MIG attributes and GPU Feature Discovery's
    `nvidia.com/gpu.memory` label use: both sides of the comparison as a node label shows it."""
    return total_bytes // 2**20


def required_memory_mib(min_gib: float) -> int:
    """`verify.min-memory-gib` in whole MiB (rounded up): a GPU passes with at least this."""
    return math.ceil(min_gib * 1024)


def _memory_checks(gpu: GpuReading, config: VerifyConfig, *, mig: bool) -> list[Check]:
    subject = _subject(gpu)
    checks = []
    if config.min_memory_gib is not None:
        sizes = (
            [d.memory_total_bytes or gpu.memory_total_bytes for d in gpu.mig_devices]
            if mig
            else [gpu.memory_total_bytes]
        )
        smallest = min(sizes) / 2**30
        what = "smallest MIG device has" if mig else "has"
        if memory_mib(min(sizes)) < required_memory_mib(config.min_memory_gib):
            checks.append(
                Check(
                    rules.MEMORY,
                    Status.FAIL,
                    subject,
                    f"{what} {smallest:.1f} GiB, the job needs {config.min_memory_gib:g} GiB "
                    "(verify.min-memory-gib)",
                    fix=f"use a GPU with at least {config.min_memory_gib:g} GiB, {EXCLUDE_RUNNER}",
                )
            )
        else:
            checks.append(Check(rules.MEMORY, Status.OK, subject, f"{what} {smallest:.1f} GiB"))
    if config.min_free_memory_gib is not None and gpu.memory_free_bytes is not None and not mig:
        free = gpu.memory_free_bytes / 2**30
        if free + 1e-9 < config.min_free_memory_gib:
            checks.append(
                Check(
                    rules.MEMORY,
                    Status.FAIL,
                    subject,
                    f"only {free:.1f} GiB free now, the job needs "
                    f"{config.min_free_memory_gib:g} GiB "
                    "(verify.min-free-memory-gib): another process holds the GPU",
                    fix="find the process with 'nvidia-smi' and stop it, " + EXCLUDE_RUNNER,
                )
            )
    return checks


def _ecc_checks(gpus: Sequence[GpuReading]) -> list[Check]:
    checks = []
    for gpu in gpus:
        errors = gpu.ecc_errors.volatile_uncorrected if gpu.ecc_errors else None
        if errors:
            checks.append(
                Check(
                    rules.ECC,
                    Status.WARN,
                    _subject(gpu),
                    f"{errors} uncorrected ECC error(s) since the driver loaded",
                    fix="run 'dcgmi diag -r 1' and drain the node if errors persist",
                )
            )
    return checks


# -- NVIDIA_REQUIRE_* ---------------------------------------------------------------------


def _require_checks(
    audit: HostAudit, gpus: Sequence[GpuReading], needs: ImageGpuNeeds
) -> list[Check]:
    nvml = audit.nvml
    devices = tuple(GpuDevice(brand=g.brand, arch=g.compute_capability) for g in gpus)
    facts = HostFacts(driver=nvml.driver_version, cuda=nvml.cuda_driver_version, gpus=devices)
    try:
        result = evaluate_requirements(needs.env, facts)
    except InvalidRequirement as error:
        return [
            Check(
                rules.REQUIRE,
                Status.FAIL,
                "image",
                f"{error}: nvidia-container-cli refuses the container with 'invalid expression'",
                fix="fix the NVIDIA_REQUIRE_* value in the image's Dockerfile",
            )
        ]
    if result.disabled:
        return [
            Check(
                rules.REQUIRE,
                Status.NOTE,
                "image",
                "NVIDIA_DISABLE_REQUIRE is set: the runtime enforces none of the image's "
                "constraints (gpuship still checks the driver below)",
            )
        ]
    if not result.requirements:
        return [
            Check(
                rules.REQUIRE,
                Status.SKIP,
                "image",
                "image sets no NVIDIA_REQUIRE_* or CUDA_VERSION",
            )
        ]
    if result.satisfied or result.failure is None:
        names = ", ".join(sorted({r.variable for r in result.requirements}))
        return [Check(rules.REQUIRE, Status.OK, "image", f"{names} satisfied on every GPU")]
    failure = result.failure
    subject = (
        _subject(gpus[failure.gpu_index])
        if failure.gpu_index is not None
        else "host (no GPU visible)"
    )
    return [
        Check(
            rules.REQUIRE,
            Status.FAIL,
            subject,
            f"{failure.requirement.variable} unsatisfied ({_failed_terms(failure)}): "
            + _enforcement(audit, failure.message),
            fix=_require_fix(failure, nvml.cuda_driver_version),
        )
    ]


# nvidia-container-toolkit v1.18.0 made jit-cdi the nvidia runtime's default mode, and CDI
# modes do not check NVIDIA_REQUIRE_* (reference cuda-compat.md §2.5).
JIT_CDI_DEFAULT_TOOLKIT = Version.parse("1.18")


def _enforcement(audit: HostAudit, message: str) -> str:
    """What the runtime on this host will do with the unsatisfied requirement."""
    legacy = f'in legacy mode the container is refused with "{message}"'
    tool = audit.container.tool("nvidia-ctk") or audit.container.tool("nvidia-container-runtime")
    version = tool.version if tool else None
    if version and Version.parse(version) >= JIT_CDI_DEFAULT_TOOLKIT:
        return (
            f"the NVIDIA Container Toolkit {version} here defaults to jit-cdi mode, which does "
            f"not check it: the container starts and CUDA fails inside the job ({legacy})"
        )
    return f"{legacy}; in CDI mode it starts and CUDA fails inside the job"


def _failed_terms(failure: RequireFailure) -> str:
    terms = [
        f"{f.factor} but host has {f.actual}" if f.actual is not None else f.factor
        for f in failure.failed_factors
    ]
    return "; ".join(dict.fromkeys(terms)) or f"failing condition {failure.condition}"


def _require_fix(failure: RequireFailure, host_cuda: str) -> str:
    for factor in failure.failed_factors:
        if factor.factor.startswith("cuda>="):
            wanted = factor.factor.removeprefix("cuda>=")
            return (
                f"{_driver_advice(wanted)}, or use an image built for CUDA <= {host_cuda}, "
                + EXCLUDE_RUNNER
            )
    return f"install a driver that satisfies '{failure.condition}', {EXCLUDE_RUNNER}"


def _driver_advice(cuda: str) -> str:
    try:
        minimum = min_driver_for(cuda)
    except UnknownVersion:
        return f"install a driver that supports CUDA {cuda}"
    return f"install driver >= {minimum} (branch R{minimum.major}) for CUDA {cuda}"


# -- driver for the image's CUDA ------------------------------------------------------------


def _driver_verdict(
    audit: HostAudit, gpu: GpuReading, needs: ImageGpuNeeds
) -> DriverVerdict | None:
    if needs.cuda is None:
        return None
    try:
        return driver_verdict(
            needs.cuda,
            audit.nvml.driver_version,
            host_cuda=audit.nvml.cuda_driver_version,
            brand=gpu.brand,
            compat_cuda=needs.compat_cuda,
        )
    except UnknownVersion:
        return None


def _driver_checks(
    audit: HostAudit,
    gpus: Sequence[GpuReading],
    needs: ImageGpuNeeds,
    verdicts: dict[int, DriverVerdict | None],
    config: VerifyConfig,
) -> list[Check]:
    nvml = audit.nvml
    stated = stated_min_driver(needs)
    checks = [] if stated is None else [_stated_driver_check(audit, stated)]
    if needs.cuda is None:
        if checks:
            return checks
        return [
            Check(
                rules.DRIVER,
                Status.SKIP,
                "image",
                "image states no CUDA version (no io.gpuship.cuda label, CUDA_VERSION or "
                "NVIDIA_REQUIRE_CUDA); run with --deep to scan its libraries",
            )
        ]
    for gpu in gpus:
        verdict = verdicts[gpu.index]
        if verdict is None:
            if stated is None:
                checks.append(_unknown_cuda_check(gpu, needs))
            continue
        checks.append(_driver_check(gpu, needs, verdict, config, nvml.cuda_driver_version))
    return checks


def _stated_driver_check(audit: HostAudit, stated: Version) -> Check:
    """The image's own min-driver label, where it asks more than its CUDA (stated_min_driver)."""
    driver = audit.nvml.driver_version
    if Version.parse(driver) >= stated:
        return Check(
            rules.DRIVER, Status.OK, "host", f"driver {driver} >= image min-driver {stated}"
        )
    return Check(
        rules.DRIVER,
        Status.FAIL,
        "host",
        f"driver {driver} < {stated}, the minimum the image states (io.gpuship.min-driver)",
        fix=f"install driver >= {stated}, {EXCLUDE_RUNNER}",
    )


def _unknown_cuda_check(gpu: GpuReading, needs: ImageGpuNeeds) -> Check:
    """CUDA unknown to the knowledge base and no min-driver label: the driver is not judged."""
    subject = _subject(gpu)
    return Check(
        rules.DRIVER,
        Status.WARN,
        subject,
        f"CUDA {needs.cuda} ({needs.cuda_source}) is not in gpuship's knowledge base and the image "
        "has no io.gpuship.min-driver label: driver not checked",
    )


def _driver_check(
    gpu: GpuReading,
    needs: ImageGpuNeeds,
    verdict: DriverVerdict,
    config: VerifyConfig,
    host_cuda: str,
) -> Check:
    subject = _subject(gpu)
    source = f" ({needs.cuda_source})" if needs.cuda_source else ""
    if verdict.status is Compatibility.OK:
        return Check(rules.DRIVER, Status.OK, subject, f"{verdict.reason}{source}")
    if verdict.status is Compatibility.MINOR_COMPAT:
        status = Status.FAIL if config.minor_version_compat == "error" else Status.WARN
        return Check(
            rules.DRIVER,
            status,
            subject,
            f"{verdict.reason}{source}",
            fix=f"{_upgrade(verdict)}, or use an image built for CUDA <= {host_cuda}",
        )
    if verdict.status is Compatibility.FORWARD_COMPAT:
        if config.forward_compat == "error":
            return Check(
                rules.DRIVER,
                Status.FAIL,
                subject,
                f"{verdict.reason}{source}; verify.forward-compat forbids it",
                fix=f"{_upgrade(verdict)}, {EXCLUDE_RUNNER}",
            )
        return Check(rules.DRIVER, Status.NOTE, subject, f"{verdict.reason}{source}")
    message = f"{verdict.reason}{source}"
    return Check(
        rules.DRIVER,
        Status.FAIL,
        subject,
        message,
        fix=f"{_upgrade(verdict)}, or use an image built for CUDA <= {host_cuda}, "
        + EXCLUDE_RUNNER,
    )


def _upgrade(verdict: DriverVerdict) -> str:
    """The driver to install, with its branch (what admins pick packages by)."""
    required = verdict.required_driver
    if required is None:
        return verdict.fix
    return f"install driver >= {required} (branch R{required.major}) for CUDA {verdict.image_cuda}"


# -- architecture coverage ------------------------------------------------------------------


def _arch_checks(
    audit: HostAudit,
    gpus: Sequence[GpuReading],
    needs: ImageGpuNeeds,
    verdicts: dict[int, DriverVerdict | None],
    config: VerifyConfig,
) -> list[Check]:
    if needs.arch_targets is None:
        return [
            Check(
                rules.ARCH,
                Status.SKIP,
                "image",
                "image states no GPU architectures (no io.gpuship.arch-list label); run with "
                "--deep to read them from its libraries",
            )
        ]
    checks = []
    for gpu in gpus:
        subject = _subject(gpu)
        sm = f"sm_{gpu.sm}"
        covered, lacking = coverage(gpu.compute_capability, needs)
        listed = ";".join(str(t) for t in needs.arch_targets) or "nothing"
        where = ", ".join(lacking) if lacking else f"the image ({listed})"
        add = (
            f"add {gpu.compute_capability} to the arch list (TORCH_CUDA_ARCH_LIST / "
            f"-gencode arch=compute_{gpu.sm},code={sm}) and rebuild"
        )
        if covered.kind is CoverageKind.SASS:
            checks.append(
                Check(rules.ARCH, Status.OK, subject, f"SASS {covered.target} runs on {sm}")
            )
            continue
        if covered.kind is CoverageKind.NONE:
            checks.append(
                Check(
                    rules.ARCH,
                    Status.FAIL,
                    subject,
                    f"{sm} has neither SASS nor PTX in {where}: kernels fail with "
                    f"'{covered.message}'",
                    fix=f"{add}, {EXCLUDE_RUNNER}",
                )
            )
            continue
        verdict = verdicts.get(gpu.index)
        if verdict is not None and verdict.status is Compatibility.MINOR_COMPAT:
            checks.append(
                Check(
                    rules.ARCH,
                    Status.FAIL,
                    subject,
                    f"{sm} is covered only by PTX {covered.target} in {where}, built by CUDA "
                    f"{needs.cuda}; "
                    f"this driver supports CUDA {audit.nvml.cuda_driver_version} and cannot JIT "
                    "newer PTX (cudaErrorUnsupportedPtxVersion)",
                    fix=f"{add}, or install a driver for CUDA {needs.cuda}, {EXCLUDE_RUNNER}",
                )
            )
            continue
        status = Status.FAIL if config.ptx_jit == "error" else Status.WARN
        checks.append(
            Check(
                rules.ARCH,
                status,
                subject,
                f"{sm} is covered only by PTX {covered.target} in {where}: JIT-compiled at "
                "first start "
                "(slow, minutes for large libraries)",
                fix=add,
            )
        )
    return checks
