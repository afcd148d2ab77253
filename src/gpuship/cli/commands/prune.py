"""`gpuship prune REPO [--apply]`: retention by digest, dry run unless --apply."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.errors import EXIT_ENVIRONMENT
from gpuship.report import Finding, Report, Severity, Table

if TYPE_CHECKING:
    from gpuship.release.prune import PrunePlan

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
    from gpuship.registry.reference import parse_repository
    from gpuship.release.ghcr import GhcrPackages
    from gpuship.release.prune import Deleter, apply_prune, plan_prune, registry_deleter
    from gpuship.release.result import PruneResult
    from gpuship.release.rules import PRUNE_DELETE, PRUNE_FAILED, RULES
    from gpuship.report.catalog import rules_by_id

    repo = parse_repository(args.repository)
    config = ctx.config.release
    with ctx.registry_client() as client:
        plan = plan_prune(client, repo, config, datetime.now(timezone.utc))
        if args.apply and plan.to_delete:
            deleter: Deleter
            if repo.registry == "ghcr.io":
                deleter = GhcrPackages(
                    repo, ctx.environ, retry=ctx.retry_policy, deadline=ctx.deadline
                ).delete
            else:
                deleter = registry_deleter(client, repo)
            apply_prune(client, repo, plan, deleter)
    report = Report(command=NAME, rules=rules_by_id(RULES), subject=str(repo))
    verb = "deleted" if args.apply else "would delete"
    for target in plan.to_delete:
        if target.digest in plan.failed:
            report.add(
                Finding(
                    PRUNE_FAILED.id,
                    Severity.ERROR,
                    f"deleting {target.digest} failed (it is still there): "
                    f"{plan.failed[target.digest]}",
                )
            )
        elif target.digest in plan.unknown:
            report.add(
                Finding(
                    PRUNE_FAILED.id,
                    Severity.ERROR,
                    f"deleting {target.digest}: whether it is gone is unknown, the registry "
                    f"stopped answering ({plan.unknown[target.digest]})",
                )
            )
        elif target.digest not in plan.skipped:
            report.add(
                Finding(
                    PRUNE_DELETE.id,
                    Severity.NOTE,
                    f"{verb} {target.digest} (tags: {', '.join(target.tags)})",
                )
            )
    report.tables.append(
        Table(
            "Tags",
            ("tag", "digest", "decision", "why"),
            tuple(
                (d.tag, d.digest[:19], "keep" if d.keep else "delete", d.reason) for d in plan.tags
            ),
        )
    )
    report.tables.append(
        Table(
            "Digests",
            ("digest", "tags", "decision", "why"),
            tuple(
                (
                    d.digest[:19],
                    ", ".join(d.tags),
                    _state(d.digest, d.delete, plan, args.apply),
                    plan.skipped.get(d.digest, d.reason),
                )
                for d in plan.digests
            ),
        )
    )
    selected = [d.digest for d in plan.to_delete]
    report.result = PruneResult(
        repository=str(repo),
        dry_run=not args.apply,
        selected=tuple(selected),
        deleted=tuple(plan.deleted),
        skipped=dict(plan.skipped),
        failed=dict(plan.failed),
        unknown=dict(plan.unknown),
        tags=tuple(plan.tags),
    )
    report.outputs = {
        "selected": ",".join(selected),
        "deleted": ",".join(plan.deleted),
        "dry-run": "false" if args.apply else "true",
    }
    if plan.interrupted:
        left = [d for d in selected if d not in plan.deleted]
        report.add(
            Finding(
                PRUNE_FAILED.id,
                Severity.ERROR,
                f"the registry stopped answering ({plan.interrupted}); {len(plan.deleted)} "
                f"digests deleted, {len(left)} selected digests not (or not known to be) deleted",
            )
        )
        report.failed_exit_code = EXIT_ENVIRONMENT
    report.failed = bool(plan.failed or plan.unknown or plan.interrupted)
    kept = sum(d.keep for d in plan.tags)
    report.headline = f"{kept} of {len(plan.tags)} tags kept; " + (
        f"{len(plan.deleted)} of {len(selected)} selected digests deleted"
        if args.apply
        else f"{len(selected)} digests would be deleted (dry run; --apply deletes)"
    )
    return report


def _state(digest: str, delete: bool, plan: PrunePlan, applied: bool) -> str:
    if not delete:
        return "keep"
    if not applied:
        return "would delete"
    if digest in plan.deleted:
        return "deleted"
    if digest in plan.skipped:
        return "skipped"
    if digest in plan.unknown:
        return "UNKNOWN"
    return "FAILED" if digest in plan.failed else "keep"


def result_type() -> object:
    """What retention selected, and what was deleted."""
    from gpuship.release.result import PruneResult

    return PruneResult
