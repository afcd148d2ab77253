"""`gpuship inspect IMAGE`: what a built image really contains, read without pulling it.

gpuship inspect ghcr.io/org/app:1.2            # registry (also registry://...)
gpuship inspect docker://app:dev               # local Docker engine
gpuship inspect docker-archive:app.tar         # docker save tarball
gpuship inspect oci:./layout:1.2               # OCI image layout
gpuship inspect ghcr.io/org/app:pr-7 --compare ghcr.io/org/app:stable   # what a change does
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "inspect"
CONFIG_FLAGS = {
    "growth_max_percent": "inspect.growth-max.percent",
    "growth_max_mib": "inspect.growth-max.mib",
}
HELP = "analyse a built image (size, waste, weights, caches, CUDA needs, GPU archs) without pulling"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """IMAGE plus the options that override the `inspect:` config section."""
    parser.add_argument(
        "image",
        metavar="IMAGE",
        help="REF or registry://REF, docker://REF, docker-archive:PATH, oci:PATH[:TAG]",
    )
    parser.add_argument(
        "--platform",
        help="platform to pick from a multi-platform index (default: this host's, e.g. "
        "linux/arm64 on aarch64)",
    )
    parser.add_argument(
        "--dockerfile",
        type=Path,
        help="Dockerfile that built the image, to point findings at lines",
    )
    parser.add_argument(
        "--target",
        action="append",
        metavar="SM",
        help="GPU architecture every GPU library must support, e.g. sm_90 (repeatable)",
    )
    parser.add_argument("--size-budget-mib", type=int, help="fail above this uncompressed size")
    parser.add_argument("--no-gpu-scan", action="store_true", help="skip the .nv_fatbin scan")
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="compare IMAGE (the candidate) with REF (e.g. what `stable` points at): sizes, "
        "layers, files, packages, CUDA, torch, weights and findings that changed",
    )
    parser.add_argument(
        "--growth-max-percent",
        type=float,
        help="with --compare: fail when IMAGE grew more than this percent over REF",
    )
    parser.add_argument(
        "--growth-max-mib",
        type=float,
        help="with --compare: fail when IMAGE grew more than this many MiB over REF",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Inspect the image and return the judged report."""
    from gpuship.image.config import ImageStageConfig
    from gpuship.image.report import inspect_report
    from gpuship.image.run import inspect_and_judge

    if not args.compare and (args.growth_max_percent or args.growth_max_mib):
        from gpuship.errors import UsageError

        raise UsageError("inspect --growth-max-percent/--growth-max-mib need --compare REF")
    settings = ctx.config.section(ImageStageConfig)
    overrides: dict[str, object] = {}
    if args.target:
        overrides["targets"] = list(args.target)
    if args.size_budget_mib is not None:
        overrides["size_budget_mib"] = args.size_budget_mib
    if args.no_gpu_scan:
        overrides["scan_gpu_code"] = False
    if overrides:
        settings = type(settings).model_validate({**settings.model_dump(), **overrides})
    if args.compare:
        from gpuship.image.compare_report import compare_report
        from gpuship.image.run import compare_and_judge

        candidate, reference = compare_and_judge(
            args.image,
            args.compare,
            settings,
            access=ctx.registry_access(),
            platform=args.platform,
            dockerfile=args.dockerfile,
            show_progress=True,
        )
        return compare_report(NAME, candidate, reference, settings)
    judgement = inspect_and_judge(
        args.image,
        settings,
        access=ctx.registry_access(),
        platform=args.platform,
        dockerfile=args.dockerfile,
        show_progress=True,
    )
    return inspect_report(NAME, judgement)


def result_type() -> object:
    """What gpuship read from the image; with --compare, what changed against REF."""
    from gpuship.image.result import ImageComparison
    from gpuship.image_result import ImageResult

    return ImageResult | ImageComparison
