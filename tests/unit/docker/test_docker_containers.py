"""Which running containers were given GPUs, read from `docker inspect` output as the engine
writes it (--gpus, CDI device names, the nvidia runtime), and how they come back."""

from __future__ import annotations

from typing import Any

from gpuship.docker.containers import gpu_containers, gpus_via


def inspected(name: str, host: dict[str, Any], env: list[str] | None = None) -> dict[str, Any]:
    return {
        "Id": f"{name}-id",
        "Name": f"/{name}",
        "Config": {
            "Image": "ghcr.io/acme/llm:1",
            "Env": env or [],
            "Labels": {"com.docker.compose.project": "stack", "com.docker.compose.service": name},
        },
        "HostConfig": host,
    }


GPUS_ALL = {"Driver": "", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]]}


def test_each_way_a_container_reaches_gpus() -> None:
    assert gpus_via(inspected("a", {"DeviceRequests": [GPUS_ALL]})) == "device-request"
    cdi_request = {"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=all"]}
    assert gpus_via(inspected("b", {"DeviceRequests": [cdi_request]})) == "cdi"
    cdi_device = {"PathOnHost": "nvidia.com/gpu=0", "PathInContainer": "", "CgroupPermissions": ""}
    assert gpus_via(inspected("c", {"Devices": [cdi_device]})) == "cdi"
    runtime = {"Runtime": "nvidia"}
    assert gpus_via(inspected("d", runtime, ["NVIDIA_VISIBLE_DEVICES=0"])) == "nvidia-runtime"


def test_containers_without_gpus_are_left_out() -> None:
    assert gpus_via(inspected("web", {"Runtime": "runc"}, ["NVIDIA_VISIBLE_DEVICES=all"])) is None
    assert gpus_via(inspected("n", {"Runtime": "nvidia"}, ["NVIDIA_VISIBLE_DEVICES=void"])) is None
    assert gpus_via(inspected("x", {"DeviceRequests": None, "Devices": None})) is None


def test_restart_policy_and_compose_service_are_read() -> None:
    found = gpu_containers(
        [
            inspected("llm", {"DeviceRequests": [GPUS_ALL], "RestartPolicy": {"Name": ""}}),
            inspected("web", {}),
            inspected("embed", {"DeviceRequests": [GPUS_ALL], "RestartPolicy": {"Name": "always"}}),
        ]
    )
    assert [(c.name, c.restart_policy, c.compose_service) for c in found] == [
        ("embed", "always", "embed"),
        ("llm", "no", "llm"),
    ]
