"""`gpuship history REPO[:TAG]`: the release records stored in the repository."""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "history"
HELP = "list the releases (promotions and rollbacks) recorded in a repository, newest first."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The repository, optionally one tag."""
    parser.add_argument("repository", help="REGISTRY/REPO, or REGISTRY/REPO:TAG for one tag")
    parser.add_argument("--limit", type=int, default=20, help="most records shown (default 20)")


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read the release records from the registry and list them, newest first."""
    from gpuship.reference import parse_reference
    from gpuship.release.config import ReleaseConfig
    from gpuship.release.history_report import history_report, read_listing

    reference = parse_reference(args.repository, default_tag=None)
    config = ctx.config.section(ReleaseConfig)
    with ctx.registry_client() as client:
        listing = read_listing(client, reference, config, args.limit)
    return history_report(NAME, listing)


def result_type() -> object:
    """The release records, newest first."""
    from gpuship.release.result import HistoryResult

    return HistoryResult
