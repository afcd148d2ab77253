"""GSV203: every GPU has a kernel in the image, by SASS or PTX JIT, judged per GPU library."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status, gpu_subject
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.readings import GpuReading
from gpuship.cuda.arch import Coverage, CoverageKind, kernel_coverage
from gpuship.cuda.drivers import Compatibility, DriverVerdict

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


def checks(
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
        subject = gpu_subject(gpu)
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
