"""`gpuship fleet`: merge runner audits with images or a build matrix into a compatibility grid."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.verify import rules

if TYPE_CHECKING:
    from gpuship.verify.fleet import Fleet

NAME = "fleet"
HELP = "compatibility of images x runners from audit files: ok/warn/fail, drivers, exclusions"

_MARK = {"ok": "ok", "warn": "warn", "fail": "FAIL"}


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
    from gpuship.verify.audit import load_audit
    from gpuship.verify.fleet import build_fleet, needs_from_matrix

    audits = [load_audit(path, ctx.limits) for path in audit_paths(args.audits)]
    images = []
    if args.matrix:
        from gpuship.documents import read_json

        path = Path(args.matrix)
        matrix = read_json(path, "matrix", ctx.limits)
        images.extend(needs_from_matrix(matrix, str(path)))
    if args.image:
        from gpuship.verify.image_source import read_gpu_needs

        images.extend(
            read_gpu_needs(
                ref,
                platform=args.platform,
                insecure_registries=ctx.config.registries.insecure,
                environ=ctx.environ,
                deep=args.deep,
                limits=ctx.limits,
            )
            for ref in args.image
        )
    return fleet_report(build_fleet(audits, images, ctx.config.verify))


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


def fleet_report(fleet: Fleet) -> Report:
    """Grid table, summary facts, findings for unplaceable images and exclusions."""
    grid = Table(
        title="Images x runners",
        headers=("image", *fleet.runners),
        rows=tuple(
            (
                image,
                *(
                    _cell_text(
                        fleet.cell(image, runner).verdict.status.value,
                        fleet.cell(image, runner).verdict.reason,
                    )
                    for runner in fleet.runners
                ),
            )
            for image in fleet.images
        ),
    )
    exclusions = fleet.exclusions()
    findings = [
        Finding(
            rule=rules.FLEET_UNPLACEABLE,
            severity=Severity.ERROR,
            message=f"{image} runs on no runner of the fleet",
            fix="install a newer driver on some runners or build a variant for an older CUDA",
        )
        for image in fleet.unrunnable_images
    ]
    for image, runners in exclusions.items():
        for runner in runners:
            if image in fleet.unrunnable_images:
                continue
            findings.append(
                Finding(
                    rule=rules.FLEET_EXCLUDE,
                    severity=Severity.WARNING,
                    message=f"{image} cannot run on {runner}: "
                    f"{fleet.cell(image, runner).verdict.reason}",
                    fix=f"exclude runner label {runner} for {image}",
                )
            )
    facts = Table(
        title="Fleet",
        headers=("", "value"),
        rows=(
            ("oldest driver in the fleet", fleet.oldest_driver),
            ("driver that runs every image natively", fleet.driver_for_all_images or "unknown"),
            ("images no runner can run", ", ".join(fleet.unrunnable_images) or "none"),
            ("runners that run no image", ", ".join(fleet.useless_runners) or "none"),
        ),
    )
    result = {
        "runners": list(fleet.runners),
        "images": list(fleet.images),
        "cells": [
            {
                "image": cell.image,
                "runner": cell.runner,
                "status": cell.verdict.status.value,
                "reason": cell.verdict.reason,
            }
            for cell in fleet.cells
        ],
        "oldest_driver": fleet.oldest_driver,
        "driver_for_all_images": fleet.driver_for_all_images,
        "driver_unknown_for": list(fleet.driver_unknown_for),
        "unrunnable_images": list(fleet.unrunnable_images),
        "runners_running_nothing": list(fleet.useless_runners),
        "exclude": {image: list(runners) for image, runners in exclusions.items() if runners},
        "runnable_on": {image: list(fleet.runnable_on(image)) for image in fleet.images},
    }
    ok = sum(1 for c in fleet.cells if c.verdict.status.value != "fail")
    catalog = rules_by_id(rules.RULES)
    return Report(
        command=NAME,
        findings=findings,
        result=result,
        rules={r: catalog[r] for r in (rules.FLEET_UNPLACEABLE, rules.FLEET_EXCLUDE)},
        tables=[grid, facts],
        outputs={
            "runnable-on": json.dumps(result["runnable_on"], separators=(",", ":")),
            "exclude": json.dumps(result["exclude"], separators=(",", ":")),
            "unrunnable-images": json.dumps(result["unrunnable_images"]),
        },
        failed=bool(fleet.unrunnable_images),
        headline=f"{ok} of {len(fleet.cells)} image x runner pairs can run; "
        f"{len(fleet.unrunnable_images)} image(s) run nowhere",
    )


def _cell_text(status: str, reason: str) -> str:
    mark = _MARK.get(status, status)
    return f"{mark}: {reason}" if reason else mark
