"""The NVML adapter against the real pynvml reading the stand-in libnvidia-ml (bed.nvml)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bed import hosts
from gpuship.errors import GpuUnavailable
from gpuship.nvml.probe import read_nvml

pytestmark = pytest.mark.integration

Describe = Callable[[Mapping[str, Any]], None]


@pytest.mark.parametrize("name", ["t4-470", "a100-550", "h200-580", "rtx4090-550", "a100-t4-535"])
def test_reads_driver_and_every_gpu_as_described(nvml_in_process: Describe, name: str) -> None:
    description = hosts.HOSTS[name]
    nvml_in_process(description)
    readings = read_nvml()
    assert readings.driver_version == description["driver_version"]
    code = description["cuda_driver_version"]
    assert readings.cuda_driver_version == f"{code // 1000}.{code % 1000 // 10}"
    assert len(readings.gpus) == len(description["gpus"])
    for reading, gpu in zip(readings.gpus, description["gpus"], strict=True):
        assert reading.name == gpu["name"]
        assert reading.uuid == gpu["uuid"]
        assert reading.compute_capability == "{}.{}".format(*gpu["compute_capability"])
        assert reading.memory_total_bytes == gpu["memory_total"]
        assert reading.memory_free_bytes == gpu["memory_total"] - gpu["memory_used"]
        assert reading.persistence_mode is bool(gpu["persistence_mode"])
        assert reading.pci_bus_id == gpu["pci_bus_id"]


def test_brands_map_to_libnvidia_container_strings(nvml_in_process: Describe) -> None:
    nvml_in_process(hosts.RTX4090_550)
    assert read_nvml().gpus[0].brand == "GeForce"
    nvml_in_process(hosts.H100_570)
    assert read_nvml().gpus[0].brand == "Nvidia"


def test_mig_devices_are_listed_with_their_memory(nvml_in_process: Describe) -> None:
    nvml_in_process(hosts.A100_MIG_550)
    gpu = read_nvml().gpus[0]
    described = hosts.A100_MIG_550["gpus"][0]["mig_devices"]
    assert gpu.mig_enabled is True
    assert [d.uuid for d in gpu.mig_devices] == [d["uuid"] for d in described]
    assert [d.memory_total_bytes for d in gpu.mig_devices] == [d["memory_total"] for d in described]


def test_gpu_without_mig_support_reads_none(nvml_in_process: Describe) -> None:
    nvml_in_process(hosts.T4_470)
    gpu = read_nvml().gpus[0]
    assert gpu.mig_enabled is None
    assert gpu.mig_devices == []


def test_ecc_counters_are_read_and_absent_ecc_is_none(nvml_in_process: Describe) -> None:
    faulty = hosts.derive(hosts.A100_550)
    faulty["gpus"][0]["ecc_errors"]["volatile_uncorrected"] = 3
    nvml_in_process(faulty)
    errors = read_nvml().gpus[0].ecc_errors
    assert errors is not None
    assert errors.volatile_uncorrected == 3
    nvml_in_process(hosts.RTX4090_550)
    assert read_nvml().gpus[0].ecc_errors is None


def test_optional_reading_failing_with_not_supported_is_none(nvml_in_process: Describe) -> None:
    variant = hosts.derive(hosts.L4_550)
    variant["gpus"][0]["fail"] = {"nvmlDeviceGetPersistenceMode": 3}
    nvml_in_process(variant)
    assert read_nvml().gpus[0].persistence_mode is None


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        (hosts.DRIVER_NOT_LOADED, "driver not loaded"),
        (hosts.NO_PERMISSION, "insufficient permissions"),
        (hosts.DRIVER_MISMATCH, "version mismatch"),
        (hosts.NO_GPU_550, "no GPU visible"),
    ],
)
def test_host_problems_are_distinct_one_line_verdicts(
    nvml_in_process: Describe, description: Mapping[str, Any], expected: str
) -> None:
    nvml_in_process(description)
    with pytest.raises(GpuUnavailable) as raised:
        read_nvml()
    message = str(raised.value)
    assert expected in message
    assert "\n" not in message
