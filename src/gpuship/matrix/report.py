"""`gpuship matrix`'s report: the planned cells as a GitHub `strategy.matrix`, or why not.

An invalid combination stops the command (exit 2) unless the caller drops it (`--drop-invalid`),
in which case it is a GSB note; an empty matrix always stops it (GitHub rejects one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpuship.compat.floor import DriverFloor, highest_floor
from gpuship.cuda.version import Version
from gpuship.errors import ConfigError
from gpuship.matrix import rules
from gpuship.matrix.cells import Cell, ImagePlan
from gpuship.matrix.result import MatrixResult
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.report.result import to_json

# docs.github.com "Running variations of jobs": a matrix generates at most 256 jobs per run.
GITHUB_MATRIX_LIMIT = 256


def matrix_report(
    command: str,
    plans: Sequence[ImagePlan],
    *,
    drop_invalid: bool,
    floors: DriverFloor | None = None,
) -> Report:
    """The matrix of every planned cell, with the `matrix` and `count` step outputs; a cell
    above every driver floor of `floors` is an error."""
    invalid = [combo for plan in plans for combo in plan.invalid]
    if invalid and not drop_invalid:
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
    report = Report(command=command, rules=rules_by_id(rules.RULES))
    for combo in invalid:
        report.add(
            Finding(
                rules.INVALID_CELL.id, Severity.NOTE, f"left out {combo.cell_id}: {combo.reason}"
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
    for finding in floor_findings(cells, floors or DriverFloor()):
        report.add(finding)
        report.failed = report.failed or finding.severity is Severity.ERROR
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


def floor_findings(cells: Sequence[Cell], floors: DriverFloor) -> list[Finding]:
    """An error for each cell whose minimum driver is above every floor (no pool keeps it); a
    note for each cell whose minimum driver is unknown, so the floor was not checked."""
    highest = highest_floor(floors)
    if highest is None:
        return []
    findings: list[Finding] = []
    for cell in cells:
        needed = cell.needs.min_driver
        if needed is None:
            findings.append(
                Finding(
                    rules.ABOVE_DRIVER_FLOOR.id,
                    Severity.NOTE,
                    f"cell {cell.id}: minimum driver unknown, driver floor not checked",
                )
            )
        elif Version.parse(needed) > highest.driver:
            findings.append(
                Finding(
                    rules.ABOVE_DRIVER_FLOOR.id,
                    Severity.ERROR,
                    f"cell {cell.id} needs driver {needed}, above the driver floor "
                    f"{highest.driver} of {highest.where} (the highest floor)",
                    fix=rules.ABOVE_DRIVER_FLOOR.fix,
                )
            )
    return findings
