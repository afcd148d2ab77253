"""`gpuship docs`: generate the action and config reference, or check they are current."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.report import Finding, Location, Report

if TYPE_CHECKING:
    from gpuship.matrix.cells import ImagePlan

NAME = "docs"
HELP = "generate the action, rule and gpuship.yaml reference (or --check it), or the --image-map"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`docs [--root DIR] [--check]`."""
    parser.add_argument(
        "--root", default=".", help="repository root holding action.yml, actions/, docs/"
    )
    parser.add_argument(
        "--image-map",
        action="store_true",
        help="print the image map (task -> image, cells, drivers, locked bases) as Markdown",
    )
    parser.add_argument("--lock", metavar="PATH", help="lock file for --image-map")
    parser.add_argument(
        "--sizes",
        action="store_true",
        help="with --image-map: read each cell's compressed size from the registry (the "
        "manifest of its first tag; no layer is read)",
    )
    parser.add_argument(
        "--fleet",
        metavar="REGISTRY/REPO",
        help="with --image-map: add the runner pools each cell can run on, from the fleet "
        "inventory (as 'gpuship route' decides)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail when a generated page differs from what is committed",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Generate (or compare) every page; each stale page is an error finding under --check."""
    from gpuship.cli.config_catalog import config_schema
    from gpuship.cli.registry import load_command
    from gpuship.cli.rules_catalog import rule_catalogs
    from gpuship.cli.stages import command_names
    from gpuship.docs.pages import generated_pages
    from gpuship.docs.result import PagesResult
    from gpuship.docs.rules import RULES, STALE
    from gpuship.report.catalog import rules_by_id

    if args.image_map:
        return _image_map(args, ctx)
    root = Path(args.root)
    # Each command's result type, for the result reference (docs/results/).
    results = {name: load_command(name).result_type() for name in command_names()}
    pages = generated_pages(root, results, rule_catalogs(), config_schema())
    report = Report(command=NAME, rules=rules_by_id(RULES))
    for path, text in pages.items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        if args.check:
            report.add(
                Finding(
                    rule=STALE.id,
                    severity=STALE.severity,
                    message=f"{path} differs from what `gpuship docs` generates from the "
                    "action.yml files, the rule catalog and the config schema",
                    location=Location(str(path)),
                    fix=STALE.fix,
                )
            )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    stale = len(report.findings)
    report.headline = (
        f"{stale} of {len(pages)} generated pages are stale"
        if args.check
        else f"{len(pages)} pages generated"
    )
    report.result = PagesResult(tuple(sorted(str(p) for p in pages)), stale)
    return report


def _image_map(args: argparse.Namespace, ctx: Context) -> Report:
    from gpuship.docs.result import ImageMapResult
    from gpuship.matrix.config import ImageConfig
    from gpuship.matrix.image_map import render_image_map
    from gpuship.matrix.project import load_project, plan_images

    project = load_project(
        ctx.config_path, ctx.config.section(list[ImageConfig]), args.lock, ctx.limits
    )
    plans = plan_images(project, project.images, ctx.environ)
    pools = None
    if args.fleet:
        from datetime import datetime, timezone

        from gpuship.compat.cell import matrix_cells
        from gpuship.compat.config import VerifyConfig
        from gpuship.route.config import RouteConfig
        from gpuship.route.run import Settings, pools_for_cells

        settings = Settings(
            verify=ctx.config.section(VerifyConfig),
            route=ctx.config.section(RouteConfig),
            access=ctx.registry_access(),
            limits=ctx.limits,
        )
        matrix = {"include": [cell.to_json() for plan in plans for cell in plan.cells]}
        planned = matrix_cells(matrix, "image map")
        pools = pools_for_cells(planned, args.fleet, settings, datetime.now(timezone.utc))
    sizes = _cell_sizes(plans, ctx) if args.sizes else None
    document = render_image_map(project.images, plans, pools, sizes)
    cells = sum(len(plan.cells) for plan in plans)
    return Report(
        command=NAME,
        document=document,
        headline=f"image map: {len(project.images)} images, {cells} cells",
        result=ImageMapResult(document),
    )


def _cell_sizes(plans: Sequence[ImagePlan], ctx: Context) -> dict[str, int | None]:
    """Cell id -> compressed bytes of its first tag as pushed (None: not pushed)."""
    from gpuship.image.config import ImageStageConfig
    from gpuship.image.inspect import pushed_sizes
    from gpuship.platforms import host_platform

    first = {cell.id: cell.tags[0] for plan in plans for cell in plan.cells if cell.tags}
    platform = ctx.config.section(ImageStageConfig).platform or host_platform()
    found = pushed_sizes(
        sorted(set(first.values())), platform=platform, access=ctx.registry_access()
    )
    return {cell: found[tag] for cell, tag in first.items()}


def result_type() -> object:
    """The pages, or the image map."""
    from gpuship.docs.result import DocsResult

    return DocsResult
