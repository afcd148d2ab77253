"""`gpuship rollback REPO:TAG [--to DIGEST|RELEASE]`: point a floating tag at a recorded digest."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.errors import InputError
from gpuship.report import Report

NAME = "rollback"
HELP = "point a floating tag back at its previous (or any recorded) digest; recorded too."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The tag, and where to send it."""
    parser.add_argument("target", help="the floating tag to roll back: REGISTRY/REPO:TAG")
    parser.add_argument(
        "--to",
        metavar="DIGEST|RELEASE",
        help="a digest, or a release id from `gpuship history` (its digest); "
        "default: the digest the tag had before its last recorded move",
    )
    parser.add_argument(
        "--expect",
        metavar="DIGEST",
        help="write only if the tag points at DIGEST (when the rollback starts and when it "
        "writes); else nothing is written, exit 1",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print where the tag would go (old -> new digest) and change nothing",
    )
    parser.add_argument(
        "--record-file",
        type=Path,
        help="also write the rollback's release record here (it is always stored in the registry)",
    )
    parser.add_argument(
        "--instructions-file",
        type=Path,
        help="also write instructions to undo the rollback here",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Resolve the rollback target from the registry-held history and move the tag there."""
    from gpuship.reference import is_digest, parse_reference
    from gpuship.release.config import ReleaseConfig
    from gpuship.release.promote import release
    from gpuship.release.report import release_report
    from gpuship.release.rollback import rollback_request

    reference = parse_reference(args.target, default_tag=None)
    if reference.tag is None or reference.digest is not None:
        raise InputError(f"rollback {args.target}: name one tag, REPO:TAG, without a digest")
    if args.expect is not None and not is_digest(args.expect):
        raise InputError(f"rollback --expect {args.expect}: give a digest, sha256:...")
    with ctx.registry_client() as client:
        config = ctx.config.section(ReleaseConfig)
        request = rollback_request(
            client, reference.repository, reference.tag, args.to, config, expect=args.expect
        )
        if args.dry_run:
            from gpuship.release.plan import plan_release
            from gpuship.release.plan_report import plan_report

            return plan_report(NAME, plan_release(client, request))
        outcome = release(
            client,
            request,
            config,
            environ=ctx.environ,
            now=datetime.now(timezone.utc),
            config_digest=ctx.config_digest(),
        )
        ctx.registry_work_done()
    return release_report(NAME, outcome, args.record_file, args.instructions_file)


def result_type() -> object:
    """The release record and what was written, or (--dry-run) what would be."""
    from gpuship.release.result import DryRunResult, ReleaseResult

    return ReleaseResult | DryRunResult
