"""`gpuship audit`: read this GPU host (NVML, container runtime, CDI, system) into a document."""

from __future__ import annotations

import argparse
import json
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


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Read the host and report it; NVML problems are exit 3 with one line."""
    from gpuship.report.render import write_atomically
    from gpuship.verify.host import audit_this_host
    from gpuship.verify.tables import gpu_table, host_table

    audit = audit_this_host(ctx.environ, ctx.config.verify, args.label)
    document = audit.model_dump(mode="json")
    if args.json_file:
        write_atomically(Path(args.json_file), json.dumps(document, indent=2) + "\n")
    nvml = audit.nvml
    names = sorted({gpu.name for gpu in nvml.gpus})
    return Report(
        command=NAME,
        result=document,
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
