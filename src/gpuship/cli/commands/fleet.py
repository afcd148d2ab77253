"""`gpuship fleet`: merge runner audits with images or a build matrix into a compatibility grid."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.compat.needs import ImageGpuNeeds

NAME = "fleet"
HELP = (
    "compatibility of images x runners from audit files: ok/warn/fail, drivers, exclusions; "
    "`fleet plan AUDIT... --driver|--cuda|--retire`: what a change does, and its rollout"
)
PLAN = "plan"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship fleet`."""
    parser.add_argument(
        "audits",
        nargs="+",
        metavar="AUDIT",
        help="audit JSON files, one per runner, or directories holding them (searched "
        "recursively, e.g. where download-artifact put them); first `plan` to plan a change",
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
    plan = parser.add_argument_group("fleet plan (combinable, each repeatable)")
    plan.add_argument(
        "--driver",
        action="append",
        default=[],
        metavar="POOL=VERSION",
        help="every host of runner label POOL runs driver VERSION",
    )
    plan.add_argument(
        "--cuda",
        action="append",
        default=[],
        metavar="[IMAGE=]X.Y",
        help="a variant of every image (or of IMAGE) built for CUDA X.Y",
    )
    plan.add_argument(
        "--retire",
        action="append",
        default=[],
        metavar="GPU|HOST",
        help="take a host, or every GPU of a model (T4), out of the fleet",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Load audits and image needs, judge every pair, report the grid (or plan a change)."""
    from gpuship.errors import UsageError

    if args.audits[0] == PLAN:
        return _plan(args, ctx)
    if args.driver or args.cuda or args.retire:
        raise UsageError("--driver, --cuda and --retire plan a change: gpuship fleet plan AUDIT...")
    from gpuship.compat.audit import load_audit
    from gpuship.compat.config import VerifyConfig
    from gpuship.compat.fleet import build_fleet
    from gpuship.compat.hosts import NamedHost, host_findings
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


def _plan(args: argparse.Namespace, ctx: Context) -> Report:
    """`gpuship fleet plan`: the change over the audits and the images in use."""
    from gpuship.compat.audit import load_audit
    from gpuship.compat.config import VerifyConfig
    from gpuship.errors import UsageError
    from gpuship.route.config import RouteConfig
    from gpuship.route.plan import parse_change
    from gpuship.route.plan_report import Checks, run_plan
    from gpuship.route.run import RouteRequest, Settings

    if len(args.audits) < 2:
        raise UsageError("fleet plan: give the audit files (or directories) of the fleet")
    change = parse_change(args.driver, args.cuda, args.retire)
    audits = [load_audit(path, ctx.limits) for path in audit_paths(args.audits[1:])]
    request = RouteRequest(images=args.image, matrix=Path(args.matrix) if args.matrix else None)
    access = ctx.registry_access()
    settings = Settings(
        verify=ctx.config.section(VerifyConfig),
        route=ctx.config.section(RouteConfig),
        access=access,
        limits=ctx.limits,
    )

    def read_needs(reference: str, platform: str) -> ImageGpuNeeds:
        from gpuship.image.needs import read_gpu_needs

        return read_gpu_needs(reference, platform=platform, access=access, deep=args.deep)

    given = (
        f"--matrix {args.matrix}" if args.matrix else " ".join(f"--image {i}" for i in args.image)
    )
    checks = Checks(fleet=" ".join(args.audits[1:]), images=given)
    return run_plan(request, audits, change, settings, read_needs, checks)


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
    """The image x runner grid and what the fleet's drivers allow, or (`fleet plan`) the
    change's image x pool grid before and after and its rollout."""
    from gpuship.route.plan_result import FleetPlanResult
    from gpuship.verify.result import FleetResult

    return FleetResult | FleetPlanResult
