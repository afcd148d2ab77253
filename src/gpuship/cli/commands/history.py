"""`gpuship history REPO[:TAG]`: the release records stored in the repository."""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.report import Report, Table

NAME = "history"
HELP = "list the releases (promotions and rollbacks) recorded in a repository, newest first."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The repository, optionally one tag."""
    parser.add_argument("repository", help="REGISTRY/REPO, or REGISTRY/REPO:TAG for one tag")
    parser.add_argument("--limit", type=int, default=20, help="most records shown (default 20)")


# How the kind column marks a release that is not complete.
_STATE = {"intent": "UNFINISHED", "abandoned": "abandoned"}


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read the release records from the registry and list them, newest first."""
    from gpuship.registry.reference import parse_reference
    from gpuship.release.config import ReleaseConfig
    from gpuship.release.history import explain, gone_digests, load_history
    from gpuship.release.result import HistoryResult

    reference = parse_reference(args.repository, default_tag=None)
    repo = reference.repository
    config = ctx.config.section(ReleaseConfig)
    with ctx.registry_client() as client:
        history = load_history(client, repo, config.history_tag, newest=config.history_limit)
        current = client.head_manifest(reference) if reference.tag is not None else None
        # Unfinished releases (running, or interrupted) are listed too: they may have moved
        # tags; and abandoned ones (undone or superseded), which moved nothing that stays.
        records = sorted([*history.entries, *history.abandoned], key=lambda r: (r.time, r.id))
        placed = None
        if reference.tag is not None:
            records = [r for r in records if any(c.tag == reference.tag for c in r.tags)]
            live = [r for r in records if r.state != "abandoned"]
            placed = explain(live, reference.tag, current.digest) if current else None
        shown = list(reversed(records))[: max(args.limit, 0)]
        gone = gone_digests(client, repo, shown)  # only the records shown: --limit bounds it

    def digest(value: str | None) -> str:
        return "none" if value is None else value[:19] + (" (GONE)" if value in gone else "")

    rows = tuple(
        (
            record.id,
            record.time.isoformat(timespec="seconds"),
            record.kind
            if record.state == "complete"
            else f"{record.kind} ({_STATE[record.state]})",
            record.actor or "-",
            digest(record.digest),
            ", ".join(
                f"{c.tag}: {digest(c.before)} -> {digest(c.after)} ({c.action.value})"
                for c in record.tags
                if reference.tag is None or c.tag == reference.tag
            ),
        )
        for record in shown
    )
    report = Report(command=NAME, subject=str(reference))
    report.tables.append(
        Table("Releases", ("release", "time", "kind", "actor", "digest", "tags"), rows)
    )
    report.result = HistoryResult(
        repository=str(repo),
        tag=reference.tag,
        current_digest=current.digest if current is not None else None,
        current_release=placed.id if placed is not None else None,
        records=tuple(shown),
        gone=tuple(sorted(gone)),
    )
    unfinished = sum(record.state == "intent" for record in records)
    abandoned = sum(record.state == "abandoned" for record in records)
    report.headline = f"{len(records)} releases recorded for {reference}" + (
        f" ({unfinished} unfinished: under way, or interrupted; the same command run again "
        "completes one)"
        if unfinished
        else ""
    )
    report.headline += f" ({abandoned} abandoned: undone or superseded)" if abandoned else ""
    report.headline += (
        f"; {len(gone)} digests they name are GONE from the repository (a rollback to one is "
        "refused)"
        if gone
        else ""
    )
    report.headline += f"; {reference.tag} is at {current.digest}" if current is not None else ""
    if current is not None:
        report.headline += (
            f", put there by release {placed.id}"
            if placed is not None
            else ", which no recorded release put there"
        )
    complete = [record for record in shown if record.state == "complete"]
    if complete:
        report.outputs["latest-release"] = complete[0].id
    return report


def result_type() -> object:
    """The release records, newest first."""
    from gpuship.release.result import HistoryResult

    return HistoryResult
