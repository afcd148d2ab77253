"""Tables shown for an audit (GPUs, host) — shared by `audit` and `verify`."""

from __future__ import annotations

from gpuship.compat.audit import HostAudit
from gpuship.report import Table


def _flag(value: bool | None) -> str:
    return "n/a" if value is None else ("on" if value else "off")


def gpu_table(audit: HostAudit) -> Table:
    """One row per GPU: what NVML reports."""
    rows = []
    for gpu in audit.nvml.gpus:
        mig = _flag(gpu.mig_enabled)
        if gpu.mig_enabled:
            mig += f" ({len(gpu.mig_devices)} devices)"
        ecc = _flag(gpu.ecc_enabled)
        if gpu.ecc_errors and gpu.ecc_errors.volatile_uncorrected is not None:
            ecc = f"{gpu.ecc_errors.volatile_uncorrected} uncorrected"
        free = f"{gpu.memory_free_bytes / 2**30:.1f}" if gpu.memory_free_bytes is not None else "?"
        rows.append(
            (
                str(gpu.index),
                gpu.name,
                gpu.brand,
                gpu.compute_capability,
                f"{gpu.memory_total_gib:.1f}",
                free,
                mig,
                _flag(gpu.persistence_mode),
                ecc,
                gpu.uuid,
            )
        )
    return Table(
        title="GPUs",
        headers=(
            "#",
            "name",
            "brand",
            "CC",
            "memory GiB",
            "free GiB",
            "MIG",
            "persistence",
            "ECC",
            "UUID",
        ),
        rows=tuple(rows),
    )


def host_table(audit: HostAudit) -> Table:
    """Driver, container plumbing and system, one fact per row."""
    container = audit.container
    docker = container.docker
    tools = ", ".join(
        f"{tool.name} {tool.version or '(version?)'}" for tool in container.tools if tool.path
    )
    cdi = ", ".join(container.gpu_cdi_devices) or "none"
    bad_specs = [spec.path for spec in container.cdi_specs if spec.error]
    rows = [
        ("runner", audit.runner.display_name),
        ("driver", audit.nvml.driver_version),
        ("CUDA (driver)", audit.nvml.cuda_driver_version),
        (
            "Docker",
            docker.server_version or "?" if docker.reachable else f"not reachable: {docker.error}",
        ),
        ("runtimes", ", ".join(docker.runtimes) or "none"),
        ("default runtime", docker.default_runtime or "?"),
        ("CDI GPU devices", cdi),
        ("NVIDIA toolkit", tools or "not installed"),
        ("kernel", audit.system.kernel),
        ("OS", audit.system.os or "?"),
    ]
    named = [
        f"{spec.path} ({', '.join(spec.driver_versions)})"
        for spec in container.cdi_specs
        if spec.driver_versions
    ]
    if named:
        rows.append(("CDI spec generated for driver", "; ".join(named)))
    if container.cdi_refresh_units is not None:
        units = [
            f"{u.name} ({'enabled' if u.enabled else 'disabled'})"
            for u in container.cdi_refresh_units
        ]
        rows.append(("CDI spec regenerated at boot by", ", ".join(units) or "nothing"))
    if bad_specs:
        rows.append(("unreadable CDI specs", ", ".join(bad_specs)))
    return Table(title="Host", headers=("", "value"), rows=tuple(rows))
