"""`gpuship verify`: can this GPU host run this image? Answered from readings, without a pull."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.errors import UsageError
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.compat.checks.base import Check

NAME = "verify"
HELP = "check that this GPU host can run an image (driver, NVIDIA_REQUIRE_*, arch, runtime)"
# Flags that set a gpuship.yaml key (flags > environment > file: `config/options.py`).
CONFIG_FLAGS = {"gpus": "verify.gpus", "min_memory_gib": "verify.min-memory-gib"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship verify`."""
    parser.add_argument(
        "image",
        nargs="?",
        help="image to check (registry ref, docker://, docker-archive:PATH, oci:PATH); "
        "omit to check only the host against verify: in gpuship.yaml",
    )
    parser.add_argument(
        "--audit",
        metavar="FILE",
        help="judge a saved 'gpuship audit' JSON instead of reading this host",
    )
    parser.add_argument(
        "--deep",
        action="store_true",
        help="scan the image's layers for its CUDA and GPU architectures when labels are absent",
    )
    parser.add_argument(
        "--platform",
        help="platform of a multi-platform image (default: the host's, e.g. linux/arm64 on "
        "aarch64; with --audit, the audited host's)",
    )
    parser.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="INDEX|UUID",
        help="check only the GPUs the job gets (repeatable; default: all)",
    )
    parser.add_argument("--gpus", type=int, help="GPUs the job needs (overrides verify.gpus)")
    parser.add_argument(
        "--min-memory-gib",
        type=float,
        help="GPU memory the job needs (overrides verify.min-memory-gib)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="also start the image with GPUs requested and run a tiny CUDA probe in it",
    )
    parser.add_argument(
        "--running",
        action="store_true",
        help="also check inside every running container started with GPUs that it still "
        "reaches them (docker exec, no pull); names each one that lost them",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read (or load) the host audit, read the image's needs, judge, report."""
    from gpuship.compat.audit import load_audit
    from gpuship.compat.config import VerifyConfig
    from gpuship.compat.verdict import judge
    from gpuship.platforms import host_platform
    from gpuship.verify.host import audit_this_host
    from gpuship.verify.readiness import readiness_checks
    from gpuship.verify.report import verdict_report

    if args.smoke and not args.image:
        raise UsageError("verify --smoke needs an IMAGE to start")
    config = ctx.config.section(VerifyConfig)
    audit = (
        load_audit(Path(args.audit), ctx.limits)
        if args.audit
        else audit_this_host(ctx.environ, config)
    )
    needs = None
    if args.image:
        from gpuship.image.needs import read_host_needs

        needs = read_host_needs(
            args.image,
            platform=args.platform or host_platform(audit.system.machine),
            access=ctx.registry_access(),
            deep=args.deep,
        )
    verdict = judge(audit, needs, config, args.gpu)
    extra: tuple[Check, ...] = readiness_checks(audit)
    if args.smoke:
        from gpuship.verify.smoke import run_smoke

        selected = tuple(
            gpu.uuid
            for gpu in audit.nvml.gpus
            if str(gpu.index) in args.gpu or gpu.uuid in args.gpu
        )
        extra += (run_smoke(args.image, ctx.environ, selected),)
    if args.running:
        from gpuship.verify.running import check_running

        extra += check_running(ctx.environ)
    from gpuship.compat.hosts import NamedHost, host_findings

    host = NamedHost(audit.runner.runner_name or audit.runner.display_name, audit)
    return verdict_report(
        NAME, verdict, audit, needs, extra, host_findings([host], config.driver_floor)
    )


def result_type() -> object:
    """The verdict and every check."""
    from gpuship.verify.result import VerifyResult

    return VerifyResult
