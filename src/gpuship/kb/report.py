"""What `gpuship kb` answers: knowledge-base lookups and the NVIDIA_REQUIRE_* check, as Reports.

Each function takes plain values (versions, names, an image environment, host facts) and
returns the Report the command renders; `cli/commands/kb.py` only parses arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuship.cuda.require import HostFacts
from gpuship.kb import result as R
from gpuship.kb.rules import RULES, UNKNOWN_RELEASE, UNSATISFIED
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id

COMMAND = "kb"


def driver_for(cuda_text: str) -> Report:
    """The minimum driver of a CUDA release and its minor-version-compatibility floor."""
    from gpuship.cuda.drivers import minor_compat_floor, toolkit_release
    from gpuship.cuda.errors import UnknownVersion
    from gpuship.cuda.knowledge import knowledge_base
    from gpuship.cuda.version import Version

    cuda = Version.parse(cuda_text, "CUDA version")
    floor = minor_compat_floor(cuda)
    report = Report(command=COMMAND, rules=rules_by_id(RULES))
    label = min_driver = source = None
    try:
        release = toolkit_release(cuda)
    except UnknownVersion as exc:
        report.add(Finding(UNKNOWN_RELEASE.id, Severity.WARNING, str(exc), fix=UNKNOWN_RELEASE.fix))
        report.headline = f"CUDA {cuda}: minimum driver unknown"
    else:
        label, min_driver, source = release.label, str(release.min_driver), release.source
        report.headline = f"CUDA {cuda} ({release.label}): driver >= {release.min_driver}"
    report.result = R.DriverFor(
        cuda=str(cuda),
        minor_compat_floor=str(floor) if floor else None,
        minor_compat_caveats=tuple(c.text for c in knowledge_base().minor_compat.caveats),
        release=label,
        min_driver=min_driver,
        source=source,
    )
    floor_text = str(floor) if floor else "none (no minor version compatibility)"
    report.outputs = {"min-driver": min_driver or "", "minor-compat-floor": str(floor or "")}
    report.tables.append(
        Table(
            f"CUDA {cuda}",
            ("requirement", "driver"),
            (
                ("full support (toolkit table)", min_driver or "unknown"),
                (f"minor version compatibility ({cuda.major}.x)", floor_text),
            ),
        )
    )
    return report


def torch(version: str) -> Report:
    """The CUDA wheel variants of a torch release, and which one plain pip installs."""
    from gpuship.cuda.torch import torch_release

    release = torch_release(version)
    variants = tuple(
        R.TorchWheel(
            name=v.name,
            cuda=str(v.cuda),
            channel=v.channel,
            arch_list=v.arch_list_text,
            index_url=v.index_url,
            cuda_runtime_wheel=v.cuda_runtime_wheel,
            source=v.source,
        )
        for v in release.variants
    )
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
        command=COMMAND,
        result=R.TorchWheels(
            torch=str(release.version),
            pypi_default=release.pypi_default,
            pypi_default_source=release.pypi_default_source,
            complete=release.complete,
            variants=variants,
            source=release.source,
        ),
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


def gpu(name: str) -> Report:
    """The compute capability of a GPU model, by the name NVML reports."""
    from gpuship.cuda.errors import UnknownVersion
    from gpuship.cuda.gpus import find_gpu

    model = find_gpu(name)
    if model is None:
        raise UnknownVersion("gpu", name)
    cc = model.compute_capability
    return Report(
        command=COMMAND,
        result=R.GpuCapability(
            name=name,
            model=model.name,
            compute_capability=str(cc),
            sm=cc.sm,
            segment=model.segment,
            source=model.source,
        ),
        tables=[
            Table(
                "GPU",
                ("name", "model", "compute capability", "segment"),
                ((name, model.name, f"{cc} ({cc.sm})", model.segment),),
            )
        ],
        headline=f"{name}: compute capability {cc} ({cc.sm})",
    )


def show() -> Report:
    """A summary of the knowledge base: CUDA and torch releases, GPU models."""
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
        command=COMMAND,
        result=R.KnowledgeSummary(
            schema_version=kb.schema_version,
            updated=kb.updated,
            cuda_releases=tuple(r[0] for r in cuda_rows),
            torch_releases=tuple(r[0] for r in torch_rows),
            gpus=tuple(g.name for g in kb.gpus),
        ),
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


def check_require(env: Mapping[str, str], host: HostFacts) -> Report:
    """Evaluate an image's NVIDIA_REQUIRE_* as nvidia-container-cli does, against `host`."""
    from gpuship.cuda.require import evaluate_requirements

    outcome = evaluate_requirements(env, host)
    failure = outcome.failure
    report = Report(command=COMMAND, rules=rules_by_id(RULES))
    report.result = R.RequireCheck(
        satisfied=outcome.satisfied,
        disabled=outcome.disabled,
        requirements=outcome.requirements,
        host=R.Host(host.driver, host.cuda, tuple(R.HostGpu(g.brand, g.arch) for g in host.gpus)),
        failure=None
        if failure is None
        else R.Failure(
            variable=failure.requirement.variable,
            expression=failure.requirement.expression,
            gpu_index=failure.gpu_index,
            condition=failure.condition,
            message=failure.message,
            failed_factors=failure.failed_factors,
        ),
    )
    rows = tuple((r.variable, r.expression) for r in outcome.requirements)
    report.tables.append(Table("requirements", ("variable", "expression"), rows))
    report.outputs = {"satisfied": "true" if outcome.satisfied else "false"}
    if failure is None:
        report.headline = (
            "requirements disabled by NVIDIA_DISABLE_REQUIRE"
            if outcome.disabled
            else f"satisfied: {len(outcome.requirements)} requirement(s)"
        )
        return report
    failing = "; ".join(f"{f.factor} (host: {f.actual})" for f in failure.failed_factors)
    where = f" on GPU {failure.gpu_index}" if failure.gpu_index is not None else ""
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
