"""`docker info` as the host audit reads it: the engine's version, runtimes, CDI spec
directories and CDI devices (`compat.container.DockerReading`).

An unreachable engine is a reading, not an error: a host without Docker is a fact the verdict
judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuship.compat.container import DockerReading
from gpuship.docker.engine import Engine, EngineRefused, engine_address
from gpuship.errors import DockerUnavailable


def read_docker(environ: Mapping[str, str]) -> DockerReading:
    """`docker info` through the SDK; an unreachable engine is a reading, not an error."""
    try:
        with Engine.connect(environ, timeout=10) as engine:
            info = engine.info()
    except (DockerUnavailable, EngineRefused):
        return DockerReading(
            reachable=False,
            error=f"cannot connect to the Docker engine at {engine_address(environ)}",
        )
    return docker_reading_from_info(info)


def docker_reading_from_info(info: Mapping[str, Any]) -> DockerReading:
    """Turn the engine's `/info` answer into a reading (pure, so it is tested on data)."""
    discovered = info.get("DiscoveredDevices") or []
    return DockerReading(
        reachable=True,
        server_version=info.get("ServerVersion"),
        runtimes=sorted((info.get("Runtimes") or {}).keys()),
        default_runtime=info.get("DefaultRuntime"),
        cdi_spec_dirs=list(info.get("CDISpecDirs") or []),
        cgroup_driver=info.get("CgroupDriver"),
        cgroup_version=info.get("CgroupVersion"),
        cdi_devices=sorted(
            str(device.get("ID"))
            for device in discovered
            if isinstance(device, Mapping) and device.get("Source") == "cdi"
        ),
    )
