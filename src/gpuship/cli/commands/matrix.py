"""`gpuship matrix`: expand `images:` into a validated GitHub `strategy.matrix`.

The result is `{"include": [cell, ...]}`; the compact one-line form is also the `matrix` step
output, ready for `strategy: {matrix: ${{ fromJSON(needs.<job>.outputs.matrix) }}}`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gpuship.cli.context import Context
from gpuship.errors import UsageError
from gpuship.report import Report

NAME = "matrix"
HELP = "expand gpuship.yaml images into a validated build matrix (JSON for fromJSON)"

if TYPE_CHECKING:
    from gpuship.limits import Limits
    from gpuship.matrix.project import MatrixOverrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `gpuship matrix`."""
    parser.add_argument(
        "--image", action="append", default=[], metavar="NAME", help="only this image (repeat)"
    )
    parser.add_argument(
        "--drop-invalid",
        action="store_true",
        help="leave invalid combinations out with a note instead of failing",
    )
    parser.add_argument("--lock", metavar="PATH", help="lock file (default: gpuship.lock)")
    parser.add_argument(
        "--axis",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="replace an axis's values in the selected images (repeat)",
    )
    parser.add_argument(
        "--include", metavar="JSON", help="JSON list of include entries to add to each image"
    )
    parser.add_argument(
        "--exclude", metavar="JSON", help="JSON list of exclude entries to add to each image"
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Expand the matrix; invalid combinations fail (exit 2) unless --drop-invalid."""
    from gpuship.compat.config import VerifyConfig
    from gpuship.matrix.config import ImageConfig
    from gpuship.matrix.project import apply_overrides, load_project, plan_images, select_images
    from gpuship.matrix.report import matrix_report

    project = load_project(
        ctx.config_path, ctx.config.section(list[ImageConfig]), args.lock, ctx.limits
    )
    images = apply_overrides(select_images(project, args.image), _overrides(args, ctx.limits))
    floors = ctx.config.section(VerifyConfig).driver_floor
    plans = plan_images(project, images, ctx.environ, floors.default)
    return matrix_report(NAME, plans, drop_invalid=args.drop_invalid, floors=floors)


def _overrides(args: argparse.Namespace, limits: Limits) -> MatrixOverrides:
    from gpuship.matrix.project import MatrixOverrides

    axes: dict[str, list[str]] = {}
    for item in args.axis:
        name, sep, values = item.partition("=")
        split = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not split:
            raise UsageError(f"--axis {item}: expected NAME=V1,V2,...")
        axes[name.strip()] = split
    return MatrixOverrides(
        axes=axes,
        include=_entries("--include", args.include, limits),
        exclude=_entries("--exclude", args.exclude, limits),
    )


def _entries(flag: str, text: str | None, limits: Limits) -> list[dict[str, Any]]:
    from gpuship.documents import load_json

    if not text or not text.strip():
        return []
    data = load_json(text, flag, limits)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        raise UsageError(f"{flag}: expected a JSON list of objects")
    return data


def result_type() -> object:
    """The matrix, ready for `fromJSON`."""
    from gpuship.matrix.result import MatrixResult

    return MatrixResult
