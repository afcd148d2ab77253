"""`gpuship audit`: read this GPU host (NVML, container runtime, CDI, system) into a document."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.verify.audit import HostAudit

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
        help="with --publish: skip when this runner's entry is newer (90s, 30m, 6h; a bare "
        "number is minutes)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read the host and report it; NVML problems are exit 3 with one line."""
    from gpuship.verify.host import audit_this_host

    if args.if_older_than and not args.publish:
        from gpuship.errors import UsageError

        raise UsageError("audit --if-older-than needs --publish REGISTRY/REPO")
    if args.publish:
        return _publish(args, ctx)
    return audit_report(args, audit_this_host(ctx.environ, ctx.config.verify, args.label))


def _publish(args: argparse.Namespace, ctx: Context) -> Report:
    from datetime import datetime, timezone

    from gpuship.config.duration import parse_duration
    from gpuship.errors import UsageError
    from gpuship.route.publish import publish_or_skip
    from gpuship.route.result import Published, PublishSkipped
    from gpuship.verify.audit import this_runner
    from gpuship.verify.host import audit_this_host

    try:
        fresh_for = parse_duration(args.if_older_than) if args.if_older_than else None
    except ValueError as error:
        raise UsageError(f"--if-older-than: {error}") from None
    outcome = publish_or_skip(
        args.publish,
        this_runner(ctx.environ, args.label),
        lambda: audit_this_host(ctx.environ, ctx.config.verify, args.label),
        if_older_than=fresh_for,
        now=datetime.now(timezone.utc),
        insecure=ctx.config.registries.insecure,
        environ=ctx.environ,
    )
    where = f"{outcome.repository}:{outcome.tag}"
    if outcome.audit is None:
        return Report(
            command=NAME,
            result=PublishSkipped(False, where, outcome.skipped_because or ""),
            outputs={"published": "false", "entry": where},
            headline=f"not published: {where} {outcome.skipped_because}",
        )
    report = audit_report(args, outcome.audit)
    report.result = Published(True, where, outcome.audit)
    report.outputs.update({"published": "true", "entry": where})
    replaced = (
        f", replacing the audit taken {outcome.previous.audit.taken_at}" if outcome.previous else ""
    )
    report.headline += f"; published to {where}{replaced}"
    return report


def audit_report(args: argparse.Namespace, audit: HostAudit) -> Report:
    """The audit as a report (tables, outputs) and, with --json-file, as a bare document."""
    from gpuship.files import write_atomically
    from gpuship.verify.tables import gpu_table, host_table

    document = audit.model_dump(mode="json")
    if args.json_file:
        write_atomically(Path(args.json_file), json.dumps(document, indent=2) + "\n", "audit")
    nvml = audit.nvml
    names = sorted({gpu.name for gpu in nvml.gpus})
    return Report(
        command=NAME,
        result=audit,
        tables=[gpu_table(audit), host_table(audit)],
        outputs={
            "driver-version": nvml.driver_version,
            "cuda-version": nvml.cuda_driver_version,
            "gpu-count": str(len(nvml.gpus)),
            "gpu-names": ", ".join(names),
            "audit": json.dumps(document, separators=(",", ":")),
        },
        headline=f"{len(nvml.gpus)} GPU(s) ({', '.join(names)}), driver {nvml.driver_version} "
        f"(CUDA {nvml.cuda_driver_version})",
    )


def result_type() -> object:
    """The audit document itself (the schema `gpuship fleet` reads), or with --publish what
    was published."""
    from gpuship.route.result import Published, PublishSkipped
    from gpuship.verify.audit import HostAudit

    return HostAudit | Published | PublishSkipped
