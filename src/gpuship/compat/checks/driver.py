"""GSV202: the host's driver runs the image's CUDA (fully, by minor version or forward
compatibility, as `verify:` allows), and meets the image's own min-driver label."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status, gpu_subject
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading
from gpuship.cuda.drivers import (
    Compatibility,
    DriverVerdict,
    driver_verdict,
    min_driver_for,
    native_driver_for,
)
from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.version import Version


def verdicts(
    audit: HostAudit, gpus: Sequence[GpuReading], needs: ImageGpuNeeds
) -> dict[int, DriverVerdict | None]:
    """Per GPU index, whether its driver runs the image's CUDA (None: no CUDA stated, or one
    the knowledge base does not know); the arch checks read it too."""
    return {gpu.index: _driver_verdict(audit, gpu, needs) for gpu in gpus}


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


def checks(
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
    subject = gpu_subject(gpu)
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
    subject = gpu_subject(gpu)
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
