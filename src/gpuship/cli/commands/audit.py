"""`gpuship audit`: read this GPU host (NVML, container runtime, CDI, system) into a document."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "audit"
HELP = "read this GPU host (driver, GPUs, MIG, container runtime, CDI) into a versioned JSON audit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship audit`."""
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="LABEL",
        help="runner label recorded in the audit (repeatable); fleet tables name runners by it",
    )
    parser.add_argument(
        "--json-file",
        metavar="PATH",
        help="also write the bare audit document (the schema fleet reads) to PATH",
    )
    parser.add_argument(
        "--publish",
        metavar="REGISTRY/REPO",
        help="store the audit as this runner's entry of the fleet inventory that "
        "'gpuship route --fleet' reads (one tag per runner; push access needed)",
    )
    parser.add_argument(
        "--if-older-than",
        metavar="DURATION",
        help="with --publish: skip the upload while this runner's entry is newer (90s, 30m, "
        "6h; a bare number is minutes) and the host still reads as it says (a driver update "
        "or a new CDI spec is published at once)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read the host and report it; NVML problems are exit 3 with one line."""
    from gpuship.compat.config import VerifyConfig
    from gpuship.verify.host import audit_this_host
    from gpuship.verify.report import audit_report

    if args.if_older_than and not args.publish:
        from gpuship.errors import UsageError

        raise UsageError("audit --if-older-than needs --publish REGISTRY/REPO")
    if args.publish:
        return _publish(args, ctx)
    audit = audit_this_host(ctx.environ, ctx.config.section(VerifyConfig), args.label)
    return audit_report(NAME, audit, _json_file(args))


def _publish(args: argparse.Namespace, ctx: Context) -> Report:
    from datetime import datetime, timezone

    from gpuship.compat.config import VerifyConfig
    from gpuship.config.duration import parse_duration
    from gpuship.errors import UsageError
    from gpuship.host.system import this_runner
    from gpuship.route.publish import publish_or_skip, publish_report
    from gpuship.verify.host import audit_this_host
    from gpuship.verify.report import audit_report

    try:
        fresh_for = parse_duration(args.if_older_than) if args.if_older_than else None
    except ValueError as error:
        raise UsageError(f"--if-older-than: {error}") from None
    runner = this_runner(ctx.environ, args.label)
    outcome = publish_or_skip(
        args.publish,
        runner,
        lambda: audit_this_host(ctx.environ, ctx.config.section(VerifyConfig), args.label),
        if_older_than=fresh_for,
        now=datetime.now(timezone.utc),
        access=ctx.registry_access(),
    )
    return publish_report(
        NAME, outcome, runner, lambda audit: audit_report(NAME, audit, _json_file(args))
    )


def _json_file(args: argparse.Namespace) -> Path | None:
    return Path(args.json_file) if args.json_file else None


def result_type() -> object:
    """The audit document itself (the schema `gpuship fleet` reads), or with --publish what
    was published."""
    from gpuship.compat.audit import HostAudit
    from gpuship.route.result import Published, PublishSkipped

    return HostAudit | Published | PublishSkipped
