"""`gpuship promote SRC@sha256:... --tag VERSION --move stable [--to REPO]`."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.errors import InputError
from gpuship.report import Report

NAME = "promote"
HELP = "promote an image by digest to version and floating tags (no pull), recording every move."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Source digest, tags to create and to move, optional other repository, output files."""
    parser.add_argument("source", help="the candidate, by digest: REGISTRY/REPO@sha256:...")
    parser.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="immutable tag to publish (refused if it already points elsewhere); repeatable",
    )
    parser.add_argument(
        "--move",
        action="append",
        default=[],
        metavar="TAG",
        help="floating tag to move to the digest (previous digest recorded); repeatable",
    )
    parser.add_argument(
        "--to",
        metavar="REPO",
        help="promote into another repository (same or other registry) instead of the source's",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (every tag old -> new digest, every blob to mount or copy, the "
        "referrers to copy) and change nothing",
    )
    parser.add_argument(
        "--record-file",
        type=Path,
        help="also write the release record JSON here (it is always stored in the registry)",
    )
    parser.add_argument(
        "--instructions-file",
        type=Path,
        help="also write the Markdown rollback instructions here (the job summary has them)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Promote, store the release record in the target repository, report every tag."""
    from gpuship.reference import parse_reference, parse_repository
    from gpuship.release.config import ReleaseConfig
    from gpuship.release.policy import classify_tags
    from gpuship.release.progress import CopyProgress
    from gpuship.release.promote import ReleaseRequest, release
    from gpuship.release.report import release_report

    source = parse_reference(args.source, default_tag=None)
    if source.digest is None:
        raise InputError(
            f"promote {args.source}: give the candidate by digest (REPO@sha256:...), "
            "so what was tested is exactly what is released"
        )
    target = parse_repository(args.to) if args.to else source.repository
    config = ctx.config.section(ReleaseConfig)
    tags = classify_tags(config.tags, args.tag, args.move)
    progress = CopyProgress()
    with ctx.registry_client() as client:
        if args.dry_run:
            from gpuship.release.plan import plan_release
            from gpuship.release.plan_report import plan_report

            plan = plan_release(client, ReleaseRequest(source, target, tuple(tags)))
            return plan_report(NAME, plan)
        outcome = release(
            client,
            ReleaseRequest(source, target, tuple(tags)),
            config,
            environ=ctx.environ,
            now=datetime.now(timezone.utc),
            config_digest=ctx.config_digest(),
            progress=progress,
        )
        ctx.registry_work_done()
    progress.finish()
    return release_report(NAME, outcome, args.record_file, args.instructions_file)


def result_type() -> object:
    """The release record and what was written, or (--dry-run) what would be."""
    from gpuship.release.result import DryRunResult, ReleaseResult

    return ReleaseResult | DryRunResult
