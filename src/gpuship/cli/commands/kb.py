"""`gpuship kb`: show the CUDA knowledge base and check `NVIDIA_REQUIRE_*` against a host.

    gpuship kb driver-for 12.4
    gpuship kb torch 2.6.0
    gpuship kb gpu "NVIDIA H100 80GB HBM3"
    gpuship kb show
    gpuship kb check-require --env NVIDIA_REQUIRE_CUDA='cuda>=12.4' --driver 535.104.05 \
        --cuda 12.2 --gpu Tesla:8.0
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.errors import InputError
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.cuda.require import GpuDevice, HostFacts

NAME = "kb"
HELP = "look up CUDA drivers, torch wheels and GPUs; check NVIDIA_REQUIRE_* against a host"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Sub-commands of `kb`."""
    # Same parser class as the CLI's, so a bad sub-command is a UsageError (exit 2).
    sub = parser.add_subparsers(
        dest="kb_command", metavar="SUBCOMMAND", required=True, parser_class=type(parser)
    )
    driver = sub.add_parser("driver-for", help="minimum Linux driver for a CUDA release")
    driver.add_argument("cuda", help='CUDA version, e.g. "12.4" or "12.4.1"')
    torch = sub.add_parser("torch", help="CUDA wheel variants of a torch release")
    torch.add_argument("version", help='torch version, e.g. "2.6.0"')
    gpu = sub.add_parser("gpu", help="compute capability of a GPU model")
    gpu.add_argument("name", help='GPU name as NVML reports it, e.g. "NVIDIA H100 80GB HBM3"')
    sub.add_parser("show", help="summary of the knowledge base")
    check = sub.add_parser(
        "check-require",
        help="evaluate an image's NVIDIA_REQUIRE_* like nvidia-container-cli "
        "(exit 0 satisfied, 1 unsatisfied, 2 invalid expression)",
    )
    check.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the image (repeatable)",
    )
    check.add_argument("--driver", help="host driver version, e.g. 535.104.05")
    check.add_argument("--cuda", help="host CUDA driver version (NVML), e.g. 12.2")
    check.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="BRAND:MAJOR.MINOR",
        help="a visible GPU, e.g. Tesla:8.0 (repeatable; none = no GPU visible)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Dispatch to the kb stage's lookup for the sub-command."""
    from gpuship.kb import report

    if args.kb_command == "driver-for":
        return report.driver_for(args.cuda)
    if args.kb_command == "torch":
        return report.torch(args.version)
    if args.kb_command == "gpu":
        return report.gpu(args.name)
    if args.kb_command == "show":
        return report.show()
    return report.check_require(_parse_env(args.env), _host(args))


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError(f"--env {pair!r}: expected NAME=VALUE")
        env[name] = value
    return env


def _host(args: argparse.Namespace) -> HostFacts:
    from gpuship.cuda.require import HostFacts
    from gpuship.cuda.version import Version

    for flag, value in (("--driver", args.driver), ("--cuda", args.cuda)):
        if value is not None:
            Version.parse(value, f"{flag} version")
    return HostFacts(args.driver, args.cuda, _parse_gpus(args.gpu))


def _parse_gpus(values: list[str]) -> tuple[GpuDevice, ...]:
    from gpuship.cuda.arch import ComputeCapability
    from gpuship.cuda.require import GpuDevice

    gpus = []
    for value in values:
        brand, sep, arch = value.rpartition(":")
        if not sep:
            raise InputError(f"--gpu {value!r}: expected BRAND:MAJOR.MINOR, e.g. Tesla:8.0")
        cc = ComputeCapability.parse(arch)
        gpus.append(GpuDevice(brand or None, str(cc)))
    return tuple(gpus)


def result_type() -> object:
    """One result type per sub-command."""
    from gpuship.kb.result import KbResult

    return KbResult
