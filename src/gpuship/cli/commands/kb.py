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
from typing import Any

from gpuship.cli.context import Context
from gpuship.errors import InputError
from gpuship.report import Finding, Report, Rule, Severity, Table

NAME = "kb"
HELP = "look up CUDA drivers, torch wheels and GPUs; check NVIDIA_REQUIRE_* against a host"

UNSATISFIED = Rule(
    id="cuda-require-unsatisfied",
    name="NVIDIA_REQUIRE unsatisfied",
    category="cuda",
    severity=Severity.ERROR,
    summary="The image's NVIDIA_REQUIRE_* conditions are not met by this host.",
    rationale=(
        "nvidia-container-cli refuses to start such a container in legacy mode, and CDI mode "
        "starts it without checking, so CUDA fails later inside the job."
    ),
    fix="Install a driver that satisfies the condition, or use an image built for an older CUDA.",
    bad_example="NVIDIA_REQUIRE_CUDA=cuda>=12.4 on driver 535 (CUDA 12.2), GeForce GPU",
    good_example="NVIDIA_REQUIRE_CUDA=cuda>=12.2 on driver 535 (CUDA 12.2)",
)
UNKNOWN_RELEASE = Rule(
    id="cuda-unknown-release",
    name="CUDA release not in the knowledge base",
    category="cuda",
    severity=Severity.WARNING,
    summary="The CUDA release has no recorded minimum driver; only its family floor is known.",
    fix="Use a CUDA release listed by `gpuship kb show`, or update gpuship.",
)


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
    """Dispatch to the sub-command."""
    handlers = {
        "driver-for": _driver_for,
        "torch": _torch,
        "gpu": _gpu,
        "show": _show,
        "check-require": _check_require,
    }
    return handlers[args.kb_command](args)


def _driver_for(args: argparse.Namespace) -> Report:
    from gpuship.cuda.drivers import minor_compat_floor, toolkit_release
    from gpuship.cuda.errors import UnknownVersion
    from gpuship.cuda.knowledge import knowledge_base
    from gpuship.cuda.version import Version

    cuda = Version.parse(args.cuda, "CUDA version")
    floor = minor_compat_floor(cuda)
    report = Report(command=NAME)
    result: dict[str, Any] = {
        "cuda": str(cuda),
        "minor_compat_floor": str(floor) if floor else None,
        "minor_compat_caveats": [c.text for c in knowledge_base().minor_compat.caveats],
    }
    try:
        release = toolkit_release(cuda)
    except UnknownVersion as exc:
        result.update({"release": None, "min_driver": None, "source": None})
        report.rules[UNKNOWN_RELEASE.id] = UNKNOWN_RELEASE
        report.add(Finding(UNKNOWN_RELEASE.id, Severity.WARNING, str(exc), fix=UNKNOWN_RELEASE.fix))
        report.headline = f"CUDA {cuda}: minimum driver unknown"
    else:
        result.update(
            {
                "release": release.label,
                "min_driver": str(release.min_driver),
                "source": release.source,
            }
        )
        report.headline = f"CUDA {cuda} ({release.label}): driver >= {release.min_driver}"
    floor_text = str(floor) if floor else "none (no minor version compatibility)"
    report.result = result
    report.outputs = {
        "min-driver": result["min_driver"] or "",
        "minor-compat-floor": str(floor or ""),
    }
    report.tables.append(
        Table(
            f"CUDA {cuda}",
            ("requirement", "driver"),
            (
                ("full support (toolkit table)", result["min_driver"] or "unknown"),
                (f"minor version compatibility ({cuda.major}.x)", floor_text),
            ),
        )
    )
    return report


def _torch(args: argparse.Namespace) -> Report:
    from gpuship.cuda.torch import torch_release

    release = torch_release(args.version)
    variants: list[dict[str, str | None]] = [
        {
            "name": v.name,
            "cuda": str(v.cuda),
            "channel": v.channel,
            "arch_list": v.arch_list_text,
            "index_url": v.index_url,
            "cuda_runtime_wheel": v.cuda_runtime_wheel,
            "source": v.source,
        }
        for v in release.variants
    ]
    rows = tuple(
        (
            v.name + (" (pip default)" if v.name == release.pypi_default else ""),
            str(v.cuda),
            v.channel,
            v.arch_list_text or "unknown",
            v.index_url,
        )
        for v in release.variants
    )
    default = release.pypi_default or "unknown"
    return Report(
        command=NAME,
        result={
            "torch": str(release.version),
            "pypi_default": release.pypi_default,
            "pypi_default_source": release.pypi_default_source,
            "complete": release.complete,
            "variants": variants,
            "source": release.source,
        },
        tables=[
            Table(
                f"torch {release.version}",
                ("variant", "cuda", "channel", "arch list", "index"),
                rows,
            )
        ],
        headline=f"torch {release.version}: {release.variant_names()}"
        f"{'' if release.complete else ' (others unknown to gpuship)'}; "
        f"plain `pip install torch` gets {default}",
    )


def _gpu(args: argparse.Namespace) -> Report:
    from gpuship.cuda.errors import UnknownVersion
    from gpuship.cuda.gpus import find_gpu

    model = find_gpu(args.name)
    if model is None:
        raise UnknownVersion("gpu", args.name)
    cc = model.compute_capability
    return Report(
        command=NAME,
        result={
            "name": args.name,
            "model": model.name,
            "compute_capability": str(cc),
            "sm": cc.sm,
            "segment": model.segment,
            "source": model.source,
        },
        tables=[
            Table(
                "GPU",
                ("name", "model", "compute capability", "segment"),
                ((args.name, model.name, f"{cc} ({cc.sm})", model.segment),),
            )
        ],
        headline=f"{args.name}: compute capability {cc} ({cc.sm})",
    )


def _show(args: argparse.Namespace) -> Report:
    from gpuship.cuda.drivers import known_cuda_releases, minor_compat_floor, toolkit_release
    from gpuship.cuda.knowledge import knowledge_base
    from gpuship.cuda.toolkits import compilable_targets
    from gpuship.cuda.torch import known_torch_releases, torch_release
    from gpuship.errors import GpushipError

    kb = knowledge_base()
    cuda_rows = []
    for cuda in known_cuda_releases():
        floor = minor_compat_floor(cuda)
        try:
            targets = " ".join(c.sm for c in compilable_targets(cuda))
        except GpushipError:
            targets = "unknown"
        cuda_rows.append(
            (str(cuda), str(toolkit_release(cuda).min_driver), str(floor or "-"), targets)
        )
    torch_rows = []
    for version in known_torch_releases():
        release = torch_release(version)
        torch_rows.append(
            (
                str(version),
                " ".join(v.name for v in release.variants),
                release.pypi_default or "unknown",
            )
        )
    return Report(
        command=NAME,
        result={
            "schema_version": kb.schema_version,
            "updated": kb.updated,
            "cuda_releases": [r[0] for r in cuda_rows],
            "torch_releases": [r[0] for r in torch_rows],
            "gpus": [g.name for g in kb.gpus],
        },
        tables=[
            Table(
                "CUDA releases",
                ("cuda", "min driver", "minor-compat floor", "SM targets"),
                tuple(cuda_rows),
            ),
            Table("torch releases", ("torch", "variants", "pip default"), tuple(torch_rows)),
        ],
        headline=f"CUDA knowledge base schema {kb.schema_version}, updated {kb.updated}: "
        f"{len(cuda_rows)} CUDA releases, {len(torch_rows)} torch releases, "
        f"{len(kb.gpus)} GPU models",
    )


def _parse_env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError(f"--env {pair!r}: expected NAME=VALUE")
        env[name] = value
    return env


def _parse_gpus(values: list[str]) -> tuple[Any, ...]:
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


def _check_require(args: argparse.Namespace) -> Report:
    from gpuship.cuda.require import HostFacts, evaluate_requirements
    from gpuship.cuda.version import Version

    env = _parse_env(args.env)
    for flag, value in (("--driver", args.driver), ("--cuda", args.cuda)):
        if value is not None:
            Version.parse(value, f"{flag} version")
    host = HostFacts(args.driver, args.cuda, _parse_gpus(args.gpu))
    outcome = evaluate_requirements(env, host)
    result: dict[str, Any] = {
        "satisfied": outcome.satisfied,
        "disabled": outcome.disabled,
        "requirements": [
            {"variable": r.variable, "expression": r.expression} for r in outcome.requirements
        ],
        "host": {
            "driver": args.driver,
            "cuda": args.cuda,
            "gpus": [{"brand": g.brand, "arch": g.arch} for g in host.gpus],
        },
        "failure": None,
    }
    report = Report(command=NAME, result=result, rules={UNSATISFIED.id: UNSATISFIED})
    rows = tuple((r.variable, r.expression) for r in outcome.requirements)
    report.tables.append(Table("requirements", ("variable", "expression"), rows))
    report.outputs = {"satisfied": "true" if outcome.satisfied else "false"}
    failure = outcome.failure
    if failure is None:
        report.headline = (
            "requirements disabled by NVIDIA_DISABLE_REQUIRE"
            if outcome.disabled
            else f"satisfied: {len(outcome.requirements)} requirement(s)"
        )
        return report
    failing = "; ".join(f"{f.factor} (host: {f.actual})" for f in failure.failed_factors)
    where = f" on GPU {failure.gpu_index}" if failure.gpu_index is not None else ""
    result["failure"] = {
        "variable": failure.requirement.variable,
        "expression": failure.requirement.expression,
        "gpu_index": failure.gpu_index,
        "condition": failure.condition,
        "message": failure.message,
        "failed_factors": [
            {"factor": f.factor, "actual": f.actual} for f in failure.failed_factors
        ],
    }
    report.failed = True
    report.outputs["message"] = failure.message
    report.headline = f"unsatisfied: {failure.requirement.variable}{where}"
    report.add(
        Finding(
            UNSATISFIED.id,
            Severity.ERROR,
            f"{failure.message} [{failure.requirement.variable}{where}; failing: {failing}]",
            fix=UNSATISFIED.fix,
        )
    )
    return report
