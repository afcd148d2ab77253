"""This host's readings: CDI spec files and os-release, read from real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuship.compat.container import ContainerReadings
from gpuship.docker.info import docker_reading_from_info
from gpuship.host.container import parse_cdi_spec, read_cdi_specs
from gpuship.host.system import read_system, this_runner

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


def test_the_runner_is_this_host_by_name_and_the_runner_name_github_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "gpu-node-7")
    runner = this_runner({"RUNNER_NAME": "gpu-runner-3"}, ["gpu", "h100"])
    assert (runner.hostname, runner.runner_name, runner.labels) == (
        "gpu-node-7",
        "gpu-runner-3",
        ["gpu", "h100"],
    )
    assert this_runner({"RUNNER_NAME": ""}).runner_name is None
