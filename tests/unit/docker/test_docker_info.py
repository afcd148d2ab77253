"""`docker info` read into the audit's Docker reading (pure: the engine's answer as data)."""

from __future__ import annotations

from gpuship.docker.info import docker_reading_from_info

# Trimmed from a real `GET /info` of Docker 28 with the NVIDIA runtime and CDI enabled.
DOCKER_INFO = {
    "ServerVersion": "28.2.2",
    "Runtimes": {
        "io.containerd.runc.v2": {"path": "runc"},
        "nvidia": {"path": "nvidia-container-runtime"},
        "runc": {"path": "runc"},
    },
    "DefaultRuntime": "runc",
    "CDISpecDirs": ["/etc/cdi", "/var/run/cdi"],
    "DiscoveredDevices": [
        {"Source": "cdi", "ID": "nvidia.com/gpu=0"},
        {"Source": "cdi", "ID": "nvidia.com/gpu=all"},
    ],
}


def test_docker_info_reading() -> None:
    reading = docker_reading_from_info(DOCKER_INFO)
    assert reading.reachable
    assert reading.server_version == "28.2.2"
    assert reading.runtimes == ["io.containerd.runc.v2", "nvidia", "runc"]
    assert reading.default_runtime == "runc"
    assert reading.cdi_devices == ["nvidia.com/gpu=0", "nvidia.com/gpu=all"]


def test_old_engine_without_cdi_fields() -> None:
    reading = docker_reading_from_info({"ServerVersion": "20.10.24", "Runtimes": {"runc": {}}})
    assert reading.cdi_spec_dirs == []
    assert reading.cdi_devices == []
    assert reading.runtimes == ["runc"]
