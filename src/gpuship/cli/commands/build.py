"""`gpuship build`: build one matrix cell, label it, push its candidate tag, report its digest.

The cell comes from `--cell JSON` (a `gpuship matrix` entry, e.g. `${{ toJSON(matrix) }}`)
or from `--image NAME --set axis=value ...`. The base image is pinned by passing the
digest reference from gpuship.lock as the build arg `BASE_IMAGE`, which the Dockerfile
uses as `ARG BASE_IMAGE` + `FROM ${BASE_IMAGE}`: the Dockerfile stays the reviewed source
(no rewriting) and every build of the cell starts from the same bytes.

Builder: `docker buildx build` when the buildx plugin is installed (the cell's cache, BuildKit
secrets and SSH, attestations; credentials in a temporary DOCKER_CONFIG holding only the
registries the build needs), else the engine's builder through the docker SDK (the push
registry's own credential per push). Pushed tags: `sha-<commit7>-<cell>` (the
candidate the release stage promotes) plus the cell's own tags. A push the registry refuses
fails the command with no digest output; half a tag set is never reported as a success.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.errors import UsageError
from gpuship.report import Report
from gpuship.report.progress import Progress

if TYPE_CHECKING:
    from gpuship.compat.cell import CellSpec
    from gpuship.image.run import ImageCheck

NAME = "build"
HELP = "build one matrix cell with its labels and push its candidate tag"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `gpuship build`."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cell", metavar="JSON", help="a matrix cell from `gpuship matrix`")
    source.add_argument("--image", metavar="NAME", help="an image of gpuship.yaml")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="AXIS=VALUE",
        help="with --image: pick the cell with these values (repeat)",
    )
    parser.add_argument("--commit", help="commit for the candidate tag (default: GITHUB_SHA, git)")
    parser.add_argument(
        "--push", action=argparse.BooleanOptionalAction, default=True, help="push (default: yes)"
    )
    parser.add_argument(
        "--builder",
        choices=("auto", "buildx", "engine"),
        default="auto",
        help="buildx when installed (auto), or the engine's builder through the docker SDK",
    )
    parser.add_argument("--network", help="network for RUN steps (e.g. none, host)")
    parser.add_argument(
        "--image-checks",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the image stage's checks on the pushed image (default: yes)",
    )
    parser.add_argument("--lock", metavar="PATH", help="lock file (default: gpuship.lock)")
    parser.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="id=ID,env=VAR|id=ID,src=FILE",
        help="BuildKit secret for RUN --mount=type=secret (buildx; repeat); values may also "
        "come as ID=VALUE lines in GPUSHIP_BUILD_SECRETS",
    )
    parser.add_argument(
        "--ssh",
        action="append",
        default=[],
        metavar="default|ID=PATH",
        help="SSH agent socket or keys for RUN --mount=type=ssh (buildx; repeat)",
    )
    parser.add_argument(
        "--provenance",
        metavar="VALUE",
        help="provenance attestation, as buildx --provenance (e.g. mode=max, false)",
    )
    parser.add_argument(
        "--sbom", metavar="VALUE", help="SBOM attestation, as buildx --sbom (e.g. true)"
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Build, push and report one cell."""
    from gpuship.builder.plan import BuildOptions, plan_build
    from gpuship.builder.run_build import execute

    options = BuildOptions(
        commit=args.commit,
        push=args.push,
        builder=args.builder,
        network=args.network,
        image_checks=args.image_checks,
        secrets=tuple(args.secret),
        ssh=tuple(args.ssh),
        provenance=args.provenance,
        sbom=args.sbom,
    )
    directory = ctx.config_path.parent if ctx.config_path else Path.cwd()
    plan = plan_build(_cell(args, ctx), directory, options, ctx.environ)
    # The builder's output, a line each, on a terminal as in CI logs.
    progress = Progress(prefix=f"[{plan.cell.id}] ")
    check = _image_check(ctx) if plan.push and plan.image_checks else None
    return execute(plan, ctx.environ, progress.line, check)


def _cell(args: argparse.Namespace, ctx: Context) -> CellSpec:
    """`--cell JSON`, or the cell of `--image` that every `--set AXIS=VALUE` picks."""
    from gpuship.compat.cell import cell_from_dict, parse_cell

    if args.cell:
        if args.set:
            raise UsageError("--set picks a cell of --image; it cannot be used with --cell")
        return parse_cell(args.cell, ctx.limits)
    from gpuship.matrix.config import ImageConfig
    from gpuship.matrix.project import load_project, pick_cell

    wanted: dict[str, str] = {}
    for pair in args.set:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--set {pair}: expected AXIS=VALUE")
        wanted[name.strip()] = value.strip()
    images = ctx.config.section(list[ImageConfig])
    project = load_project(ctx.config_path, images, args.lock, ctx.limits)
    return cell_from_dict(pick_cell(project, args.image, wanted, ctx.environ))


def _image_check(ctx: Context) -> ImageCheck:
    """The image stage's checks of the pushed image, as the `inspect:` config sets them."""
    from gpuship.image.config import ImageStageConfig
    from gpuship.image.run import image_check

    return image_check(ctx.config.section(ImageStageConfig), ctx.registry_access())


def result_type() -> object:
    """Built, build failed, or push refused."""
    from gpuship.builder.result import BuildResult

    return BuildResult
