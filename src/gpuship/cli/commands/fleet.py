"""`gpuship fleet`: merge runner audits with images or a build matrix into a compatibility grid."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "fleet"
HELP = "compatibility of images x runners from audit files: ok/warn/fail, drivers, exclusions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship fleet`."""
    parser.add_argument(
        "audits",
        nargs="+",
        metavar="AUDIT",
        help="audit JSON files, one per runner, or directories holding them (searched "
        "recursively, e.g. where download-artifact put them)",
    )
    parser.add_argument(
        "--image", action="append", default=[], metavar="REF", help="image to place (repeatable)"
    )
    parser.add_argument(
        "--matrix", metavar="FILE", help="'gpuship matrix' JSON: one image per cell"
    )
    parser.add_argument("--deep", action="store_true", help="scan images whose labels are absent")
    parser.add_argument(
        "--platform", default="linux/amd64", help="platform of multi-platform images"
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Load audits and image needs, judge every pair, report the grid."""
    from gpuship.compat.audit import load_audit
    from gpuship.compat.config import VerifyConfig
    from gpuship.compat.fleet import build_fleet
    from gpuship.compat.hosts import NamedHost, host_findings
    from gpuship.compat.needs import ImageGpuNeeds
    from gpuship.verify.report import fleet_report

    audits = [load_audit(path, ctx.limits) for path in audit_paths(args.audits)]
    images: list[ImageGpuNeeds] = []
    if args.matrix:
        from gpuship.compat.cell import cell_needs, read_matrix

        images.extend(cell_needs(cell) for cell in read_matrix(Path(args.matrix), ctx.limits))
    if args.image:
        from gpuship.image.needs import read_gpu_needs

        images.extend(
            read_gpu_needs(
                ref,
                platform=args.platform,
                access=ctx.registry_access(),
                deep=args.deep,
            )
            for ref in args.image
        )
    config = ctx.config.section(VerifyConfig)
    # A host is named as its runner (the grid's columns are its labels, which it may lie about).
    named = [NamedHost(a.runner.runner_name or a.runner.hostname, a) for a in audits]
    return fleet_report(
        build_fleet(audits, images, config), host_findings(named, config.driver_floor)
    )


def audit_paths(arguments: list[str]) -> list[Path]:
    """Files as given; for a directory, every `*.json` below it, sorted."""
    from gpuship.errors import InputError

    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.json") if p.is_file())
            if not found:
                raise InputError(f"{argument}: no audit *.json files in this directory")
            paths.extend(found)
        else:
            paths.append(path)
    return paths


def result_type() -> object:
    """The image x runner grid and what the fleet's drivers allow."""
    from gpuship.verify.result import FleetResult

    return FleetResult
