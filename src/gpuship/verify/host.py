"""Take an audit of the host this process runs on (NVML + container side + system)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

from gpuship.compat.audit import HostAudit, new_audit
from gpuship.compat.config import VerifyConfig
from gpuship.compat.container import ContainerReadings
from gpuship.docker.containers import read_gpu_containers
from gpuship.docker.info import read_docker
from gpuship.host.container import (
    TOOLKIT_BINARIES,
    read_cdi_refresh_units,
    read_cdi_specs,
    read_tool,
)
from gpuship.host.readiness import CommandRunner, read_readiness, run_command
from gpuship.host.system import read_system, this_runner
from gpuship.nvml.probe import read_nvml


def audit_this_host(
    environ: Mapping[str, str], config: VerifyConfig, labels: Iterable[str] = ()
) -> HostAudit:
    """Read everything `verify` judges; NVML problems raise `GpuUnavailable` (exit 3)."""
    nvml = read_nvml()
    container = read_container_side(
        environ, config.cdi_spec_dirs, config.systemd_unit_dirs, Path(config.host_root)
    )
    system = read_system()
    taken_at = datetime.now(timezone.utc)
    return new_audit(nvml, container, system, this_runner(environ, labels), taken_at)


def read_container_side(
    environ: Mapping[str, str],
    cdi_spec_dirs: Iterable[str],
    unit_dirs: Iterable[str],
    root: Path = Path("/"),
    run: CommandRunner = run_command,
) -> ContainerReadings:
    """Read the Docker engine, CDI spec dirs (configured plus the engine's), toolkit tools,
    the systemd units that regenerate CDI specs, and the host's readiness under `root`."""
    docker_reading = read_docker(environ)
    containers = read_gpu_containers(environ) if docker_reading.reachable else None
    dirs = list(dict.fromkeys([*cdi_spec_dirs, *docker_reading.cdi_spec_dirs]))
    return ContainerReadings(
        docker=docker_reading,
        cdi_specs=read_cdi_specs(dirs),
        tools=[read_tool(name, environ) for name in TOOLKIT_BINARIES],
        cdi_refresh_units=read_cdi_refresh_units(unit_dirs),
        readiness=read_readiness(root, run, containers),
    )
