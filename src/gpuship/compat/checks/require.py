"""GSV201: the image's NVIDIA_REQUIRE_* hold on this host, as nvidia-container-cli checks
them, and what the runtime here does when they do not."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status, gpu_subject
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading
from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.errors import InvalidRequirement, UnknownVersion
from gpuship.cuda.require import GpuDevice, HostFacts, RequireFailure, evaluate_requirements
from gpuship.cuda.version import Version


def checks(audit: HostAudit, gpus: Sequence[GpuReading], needs: ImageGpuNeeds) -> list[Check]:
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
        gpu_subject(gpus[failure.gpu_index])
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
