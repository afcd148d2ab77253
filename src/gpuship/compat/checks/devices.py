"""The GPUs the job gets: GSV103 MIG as `verify.mig` asks, GSV102 how many are usable,
GSV104 their memory, GSV105 uncorrected ECC errors."""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuship.compat import rule_ids as rules
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status, gpu_subject
from gpuship.compat.config import VerifyConfig
from gpuship.compat.readings import GpuReading


def checks(gpus: Sequence[GpuReading], config: VerifyConfig) -> list[Check]:
    """MIG, device count and memory, then ECC, for the GPUs the job gets."""
    return [*_device_checks(gpus, config), *_ecc_checks(gpus)]


def _device_checks(gpus: Sequence[GpuReading], config: VerifyConfig) -> list[Check]:
    checks: list[Check] = []
    usable = 0
    for gpu in gpus:
        subject = gpu_subject(gpu)
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
    subject = gpu_subject(gpu)
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
                    gpu_subject(gpu),
                    f"{errors} uncorrected ECC error(s) since the driver loaded",
                    fix="run 'dcgmi diag -r 1' and drain the node if errors persist",
                )
            )
    return checks
