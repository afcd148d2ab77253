"""`gpuship matrix`: expand `images:` into a validated GitHub `strategy.matrix`.

The result is `{"include": [cell, ...]}`; the compact one-line form is also the `matrix` step
output, ready for `strategy: {matrix: ${{ fromJSON(needs.<job>.outputs.matrix) }}}`.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from gpuship.cli.context import Context
from gpuship.errors import ConfigError, UsageError
from gpuship.report import Finding, Report, Severity, Table

NAME = "matrix"
HELP = "expand gpuship.yaml images into a validated build matrix (JSON for fromJSON)"

if TYPE_CHECKING:
    from gpuship.limits import Limits
    from gpuship.matrix.project import MatrixOverrides

# docs.github.com "Running variations of jobs": a matrix generates at most 256 jobs per run.
GITHUB_MATRIX_LIMIT = 256


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
    from gpuship.matrix import rules
    from gpuship.matrix.project import apply_overrides, load_project, plan_images, select_images
    from gpuship.matrix.result import MatrixResult
    from gpuship.report.catalog import rules_by_id
    from gpuship.report.result import to_json

    project = load_project(ctx.config_path, ctx.config.images, args.lock, ctx.limits)
    images = apply_overrides(select_images(project, args.image), _overrides(args, ctx.limits))
    plans = plan_images(project, images, ctx.environ)
    invalid = [combo for plan in plans for combo in plan.invalid]
    if invalid and not args.drop_invalid:
        first = invalid[0]
        more = (
            f" (and {len(invalid) - 1} more; --drop-invalid leaves them out)"
            if len(invalid) > 1
            else " (--drop-invalid leaves it out)"
        )
        raise ConfigError(f"matrix cell {first.cell_id}: {first.reason}{more}")
    cells = [cell for plan in plans for cell in plan.cells]
    if not cells:
        # GitHub fails a job whose strategy.matrix has no combination at all.
        left_out = f" ({len(invalid)} invalid combinations left out)" if invalid else ""
        raise ConfigError(f"the matrix has no cells{left_out}; GitHub rejects an empty matrix")
    report = Report(command=NAME, rules=rules_by_id(rules.RULES))
    for combo in invalid:
        report.add(
            Finding(
                rule=rules.INVALID_CELL.id,
                severity=Severity.NOTE,
                message=f"left out {combo.cell_id}: {combo.reason}",
            )
        )
    for plan in plans:
        for note in plan.notes:
            report.add(Finding(rules.UNKNOWN_VERSION.id, Severity.NOTE, note))
    if len(cells) > GITHUB_MATRIX_LIMIT:
        report.add(
            Finding(
                rules.MATRIX_TOO_LARGE.id,
                Severity.WARNING,
                f"{len(cells)} cells; GitHub runs at most {GITHUB_MATRIX_LIMIT} jobs per matrix",
            )
        )
    report.result = MatrixResult(tuple(cell.entry() for cell in cells))
    report.outputs["matrix"] = json.dumps(to_json(report.result), separators=(",", ":"))
    report.outputs["count"] = str(len(cells))
    report.tables.append(
        Table(
            title="Build matrix",
            headers=("cell", "cuda", "torch", "min driver", "arch list", "base"),
            rows=tuple(
                (
                    cell.id,
                    cell.needs.cuda or "-",
                    cell.needs.torch or "-",
                    cell.needs.min_driver or "-",
                    cell.needs.arch_list or "-",
                    cell.base_image or "-",
                )
                for cell in cells
            ),
        )
    )
    dropped = f", {len(invalid)} left out" if invalid else ""
    report.headline = f"{len(cells)} cells from {len(plans)} images{dropped}"
    return report


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
