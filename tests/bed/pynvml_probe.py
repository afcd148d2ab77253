"""Read a host through the real pynvml and print it as JSON (run as a script in a subprocess).

Output: {"error": {"class", "value", "message"}} when nvmlInit fails, else
{"driver", "cuda", "cuda_v2", "nvml", "gpus": [...]} with, per GPU, what pynvml returned or
the name of the NVMLError class it raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pynvml


def _reading(call: Callable[[], Any]) -> Any:
    try:
        value = call()
    except pynvml.NVMLError as error:
        return {"nvml_error": type(error).__name__}
    if hasattr(value, "_fields_"):
        return {name: getattr(value, name) for name, _type in value._fields_}
    return list(value) if isinstance(value, tuple) else value


def _device(handle: Any) -> dict[str, Any]:
    readings = {
        "name": lambda: pynvml.nvmlDeviceGetName(handle),
        "uuid": lambda: pynvml.nvmlDeviceGetUUID(handle),
        "brand": lambda: pynvml.nvmlDeviceGetBrand(handle),
        "architecture": lambda: pynvml.nvmlDeviceGetArchitecture(handle),
        "compute_capability": lambda: pynvml.nvmlDeviceGetCudaComputeCapability(handle),
        "memory": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle),
        "memory_v2": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2),
        "persistence_mode": lambda: pynvml.nvmlDeviceGetPersistenceMode(handle),
        "mig_mode": lambda: pynvml.nvmlDeviceGetMigMode(handle),
        "is_mig": lambda: pynvml.nvmlDeviceIsMigDeviceHandle(handle).value,
        "ecc_uncorrected_volatile": lambda: pynvml.nvmlDeviceGetTotalEccErrors(
            handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
        ),
        "pci_bus_id": lambda: pynvml.nvmlDeviceGetPciInfo(handle).busId,
    }
    described = {key: _reading(call) for key, call in readings.items()}
    if described["mig_mode"] == [pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_ENABLE]:
        migs = []
        for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except pynvml.NVMLError_NotFound:
                continue
            migs.append(_device(mig))
        described["mig_devices"] = migs
    return described


def main() -> None:
    """Print the host as pynvml sees it."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        failure = {"class": type(error).__name__, "value": error.value, "message": str(error)}
        print(json.dumps({"error": failure}))
        return
    try:
        count = pynvml.nvmlDeviceGetCount()
        host = {
            "driver": _reading(pynvml.nvmlSystemGetDriverVersion),
            "cuda": _reading(pynvml.nvmlSystemGetCudaDriverVersion),
            "cuda_v2": _reading(pynvml.nvmlSystemGetCudaDriverVersion_v2),
            "nvml": _reading(pynvml.nvmlSystemGetNVMLVersion),
            "gpus": [_device(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)],
        }
    finally:
        pynvml.nvmlShutdown()
    print(json.dumps(host))


if __name__ == "__main__":
    main()
