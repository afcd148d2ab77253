"""Container-side readings from engine answers and CDI spec files (pure parsing)."""

from __future__ import annotations

import json
from pathlib import Path

from gpuship.compat.container import ContainerReadings
from gpuship.verify.container import (
    docker_reading_from_info,
    parse_cdi_spec,
    read_cdi_specs,
    read_system,
)

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

# Shape of `nvidia-ctk cdi generate` output (cuda-compat.md §7.3: index,uuid names + all).
CDI_SPEC = """\
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
  - name: GPU-3118f96a-2d63-c21c-1706-e8c7895ce8e8
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
  - name: all
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
containerEdits:
  deviceNodes:
    - path: /dev/nvidiactl
"""


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


def test_cdi_spec_devices_are_fully_qualified(tmp_path: Path) -> None:
    path = tmp_path / "nvidia.yaml"
    path.write_text(CDI_SPEC)
    spec = parse_cdi_spec(path)
    assert spec.error is None
    assert spec.devices == [
        "nvidia.com/gpu=0",
        "nvidia.com/gpu=GPU-3118f96a-2d63-c21c-1706-e8c7895ce8e8",
        "nvidia.com/gpu=all",
    ]


def test_cdi_dirs_read_json_and_yaml_skip_others_and_report_broken(tmp_path: Path) -> None:
    (tmp_path / "nvidia.yaml").write_text(CDI_SPEC)
    (tmp_path / "other.json").write_text(
        json.dumps(
            {"cdiVersion": "0.6.0", "kind": "vendor.example/fpga", "devices": [{"name": "a"}]}
        )
    )
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    (tmp_path / "README").write_text("not a spec")
    specs = read_cdi_specs([str(tmp_path), str(tmp_path / "missing")])
    by_name = {Path(s.path).name: s for s in specs}
    assert set(by_name) == {"nvidia.yaml", "other.json", "broken.yaml"}
    assert by_name["broken.yaml"].error
    assert by_name["other.json"].devices == ["vendor.example/fpga=a"]
    readings = ContainerReadings(
        docker=docker_reading_from_info({"Runtimes": {"runc": {}}}), cdi_specs=specs
    )
    assert readings.gpu_cdi_devices[0] == "nvidia.com/gpu=0"
    assert "vendor.example/fpga=a" not in readings.gpu_cdi_devices
    assert not readings.nvidia_runtime


def test_system_reading_names_the_os(tmp_path: Path) -> None:
    os_release = tmp_path / "os-release"
    os_release.write_text('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 24.04.1 LTS"\n')
    reading = read_system(os_release)
    assert reading.os == "Ubuntu 24.04.1 LTS"
    assert reading.kernel
    assert read_system(tmp_path / "absent").os is None
