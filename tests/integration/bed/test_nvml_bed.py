"""The NVML stand-in answers the real pynvml exactly as the host description says, and the
system libnvidia-ml answers "Driver Not Loaded" on this driverless machine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bed import hosts
from bed.nvml import read_with_pynvml

pytestmark = pytest.mark.integration

HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]


@pytest.mark.parametrize("name", sorted(n for n, h in hosts.HOSTS.items() if "init_error" not in h))
def test_pynvml_reads_every_described_reading(nvml_host: HostEnv, name: str) -> None:
    described = hosts.HOSTS[name]
    read = read_with_pynvml(nvml_host(described))
    assert read["driver"] == described["driver_version"]
    assert read["cuda"] == read["cuda_v2"] == described["cuda_driver_version"]
    assert read["nvml"] == described["nvml_version"]
    assert len(read["gpus"]) == len(described["gpus"])
    for seen, gpu in zip(read["gpus"], described["gpus"], strict=True):
        assert seen["name"] == gpu["name"]
        assert seen["uuid"] == gpu["uuid"]
        assert seen["brand"] == gpu["brand"]
        assert seen["architecture"] == gpu["architecture"]
        assert seen["compute_capability"] == gpu["compute_capability"]
        assert seen["memory"]["total"] == gpu["memory_total"]
        assert seen["memory"]["free"] + seen["memory"]["used"] == gpu["memory_total"]
        assert seen["memory_v2"]["total"] == gpu["memory_total"]
        assert seen["pci_bus_id"] == gpu["pci_bus_id"]
        assert seen["is_mig"] == 0
        expected_mig = gpu.get("mig_mode", {"nvml_error": "NVMLError_NotSupported"})
        assert seen["mig_mode"] == expected_mig
        expected_ecc = 0 if "ecc_errors" in gpu else {"nvml_error": "NVMLError_NotSupported"}
        assert seen["ecc_uncorrected_volatile"] == expected_ecc


def test_mig_devices_are_enumerated_with_their_own_identity(nvml_host: HostEnv) -> None:
    described = hosts.A100_MIG_550["gpus"][0]
    (gpu,) = read_with_pynvml(nvml_host(hosts.A100_MIG_550))["gpus"]
    assert gpu["mig_mode"] == [1, 1]
    assert [mig["uuid"] for mig in gpu["mig_devices"]] == [
        mig["uuid"] for mig in described["mig_devices"]
    ]
    first = gpu["mig_devices"][0]
    assert first["is_mig"] == 1
    assert first["name"].endswith("MIG 3g.40gb")
    assert first["memory"]["total"] == described["mig_devices"][0]["memory_total"]
    assert first["compute_capability"] == [8, 0]  # a MIG device reads its GPU's chip


@pytest.mark.parametrize(
    ("description", "error_class", "message"),
    [
        (hosts.DRIVER_NOT_LOADED, "NVMLError_DriverNotLoaded", "Driver Not Loaded"),
        (hosts.NO_PERMISSION, "NVMLError_NoPermission", "Insufficient Permissions"),
        (
            hosts.DRIVER_MISMATCH,
            "NVMLError_LibRmVersionMismatch",
            "RM has detected an NVML/RM version mismatch.",
        ),
    ],
)
def test_described_init_failure_reaches_pynvml(
    nvml_host: HostEnv, description: dict[str, Any], error_class: str, message: str
) -> None:
    read = read_with_pynvml(nvml_host(description))
    assert read["error"] == {
        "class": error_class,
        "value": description["init_error"],
        "message": message,
    }


def test_forced_errors_hit_only_the_named_call(nvml_host: HostEnv) -> None:
    mixed = hosts.derive(
        hosts.A100_T4_535,
        fail={"nvmlSystemGetCudaDriverVersion_v2": hosts.NVML_ERROR_LIBRARY_NOT_FOUND},
    )
    mixed["gpus"][1]["fail"] = {"nvmlDeviceGetMemoryInfo": 15}
    read = read_with_pynvml(nvml_host(mixed))
    assert read["cuda"] == 12020
    assert read["cuda_v2"] == {"nvml_error": "NVMLError_LibraryNotFound"}
    assert read["gpus"][0]["memory"]["total"] == mixed["gpus"][0]["memory_total"]
    assert read["gpus"][1]["memory"] == {"nvml_error": "NVMLError_GpuIsLost"}
    assert read["gpus"][1]["memory_v2"]["total"] == mixed["gpus"][1]["memory_total"]


def test_malformed_description_fails_init_with_a_message(nvml_host: HostEnv, tmp_path: Any) -> None:
    env = nvml_host({})
    bad = tmp_path / "bad.json"
    bad.write_text('{"gpus": [')
    env["GPUSHIP_FAKE_NVML"] = str(bad)
    assert read_with_pynvml(env)["error"]["class"] == "NVMLError_Unknown"


def test_stub_without_description_is_a_host_without_driver(nvml_host: HostEnv) -> None:
    env = nvml_host(hosts.A100_550)
    del env["GPUSHIP_FAKE_NVML"]
    assert read_with_pynvml(env)["error"]["class"] == "NVMLError_DriverNotLoaded"


def test_in_process_pynvml_reads_the_stand_in(
    nvml_in_process: Callable[[Mapping[str, Any]], None],
) -> None:
    import pynvml

    nvml_in_process(hosts.H200_580)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert pynvml.nvmlDeviceGetName(handle) == "NVIDIA H200"
    assert pynvml.nvmlSystemGetCudaDriverVersion() == 13000
    pynvml.nvmlShutdown()
    nvml_in_process(hosts.RTX4090_550)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert pynvml.nvmlDeviceGetBrand(handle) == pynvml.NVML_BRAND_GEFORCE
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetMigMode(handle)


def test_system_libnvidia_ml_reports_driver_not_loaded(real_nvml_env: dict[str, str]) -> None:
    read = read_with_pynvml(real_nvml_env)
    assert read["error"] == {
        "class": "NVMLError_DriverNotLoaded",
        "value": 9,
        "message": "Driver Not Loaded",
    }
