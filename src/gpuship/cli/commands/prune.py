"""`gpuship prune REPO [--apply]`: retention by digest, dry run unless --apply."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "prune"
HELP = "apply the retention policy to a repository by digest (dry run unless --apply)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The repository and whether to delete."""
    parser.add_argument("repository", help="REGISTRY/REPO to prune")
    parser.add_argument(
        "--apply",
        action="store_true",
        help="delete the selected digests (default: only show what would be deleted)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Plan (and with --apply, delete); lists what is kept and why."""
    from gpuship.reference import parse_repository
    from gpuship.registry.ghcr import GhcrPackages
    from gpuship.release.config import ReleaseConfig
    from gpuship.release.prune import Deleter, apply_prune, plan_prune, registry_deleter
    from gpuship.release.prune_report import prune_report

    repo = parse_repository(args.repository)
    with ctx.registry_client() as client:
        plan = plan_prune(
            client, repo, ctx.config.section(ReleaseConfig), datetime.now(timezone.utc)
        )
        if args.apply and plan.to_delete:
            deleter: Deleter
            if repo.registry == "ghcr.io":
                # GHCR deletes package versions through GitHub's API, not the registry's.
                deleter = GhcrPackages(
                    repo, ctx.environ, retry=ctx.retry_policy, deadline=ctx.deadline
                ).delete
            else:
                deleter = registry_deleter(client, repo)
            apply_prune(client, repo, plan, deleter)
            ctx.registry_work_done()
    return prune_report(NAME, repo, plan, applied=args.apply)


def result_type() -> object:
    """What retention selected, and what was deleted."""
    from gpuship.release.result import PruneResult

    return PruneResult
