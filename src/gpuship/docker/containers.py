"""The running containers that were given GPUs, as `docker inspect` shows them.

A container reaches GPUs three ways (reference cuda-compat.md §7.3-7.4): a device request
(`--gpus`, HostConfig.DeviceRequests with the `gpu` capability or the `nvidia` driver), CDI
device names (`--device nvidia.com/gpu=all`, in HostConfig.Devices on Docker 25+ or as
DeviceRequests of the `cdi` driver), or the `nvidia` runtime with NVIDIA_VISIBLE_DEVICES set
to anything but `void`/`none`. Compose labels say which service of which project it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuship.compat.readiness import GpuContainer
from gpuship.docker.engine import Engine, EngineRefused
from gpuship.errors import DockerUnavailable

COMPOSE_PROJECT = "com.docker.compose.project"
COMPOSE_SERVICE = "com.docker.compose.service"
_NO_DEVICES = {"", "void", "none"}


def read_gpu_containers(environ: Mapping[str, str]) -> list[GpuContainer] | None:
    """Every running container given GPUs; None when the engine cannot be asked."""
    try:
        with Engine.connect(environ, timeout=10) as engine:
            inspected = engine.running_containers()
    except (DockerUnavailable, EngineRefused):
        return None
    return gpu_containers(inspected)


def gpu_containers(inspected: list[dict[str, Any]]) -> list[GpuContainer]:
    """The containers of `docker inspect` output that were given GPUs (pure)."""
    found = []
    for attrs in inspected:
        via = gpus_via(attrs)
        if via is not None:
            found.append(_reading(attrs, via))
    return sorted(found, key=lambda c: c.name)


def gpus_via(attrs: Mapping[str, Any]) -> str | None:
    """How the container was given GPUs, or None when it was not."""
    host = attrs.get("HostConfig") or {}
    for request in host.get("DeviceRequests") or []:
        driver = request.get("Driver") or ""
        capabilities = {c for group in request.get("Capabilities") or [] for c in group}
        if driver == "cdi" or any(str(d).startswith("nvidia.com/") for d in _ids(request)):
            return "cdi"
        if driver == "nvidia" or "gpu" in capabilities:
            return "device-request"
    for device in host.get("Devices") or []:
        if str(device.get("PathOnHost", "")).startswith("nvidia.com/"):
            return "cdi"
    if str(host.get("Runtime", "")).startswith("nvidia"):
        env = dict(
            item.partition("=")[::2] for item in (attrs.get("Config") or {}).get("Env") or []
        )
        if env.get("NVIDIA_VISIBLE_DEVICES", "").strip() not in _NO_DEVICES:
            return "nvidia-runtime"
    return None


def _ids(request: Mapping[str, Any]) -> list[str]:
    return [str(i) for i in request.get("DeviceIDs") or []]


def _reading(attrs: Mapping[str, Any], via: str) -> GpuContainer:
    config = attrs.get("Config") or {}
    labels = config.get("Labels") or {}
    policy = ((attrs.get("HostConfig") or {}).get("RestartPolicy") or {}).get("Name") or "no"
    return GpuContainer(
        id=str(attrs.get("Id", "")),
        name=str(attrs.get("Name", "")).lstrip("/"),
        image=str(config.get("Image", "")),
        gpus_via=via,
        restart_policy=policy,
        compose_project=labels.get(COMPOSE_PROJECT),
        compose_service=labels.get(COMPOSE_SERVICE),
    )
