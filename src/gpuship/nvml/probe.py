"""Read the host's GPUs through NVML (`pynvml` from nvidia-ml-py).

Thin on purpose: every call maps one NVML function to one field. Optional facts that a GPU
or an older driver cannot give (MIG on a T4, ECC on a GeForce, a symbol missing from an old
libnvidia-ml) become None; the facts `verify` cannot do without raise `GpuUnavailable` with
one line saying which of the distinct host problems this is.
"""

from __future__ import annotations

import contextlib
from typing import Any

from gpuship.compat.readings import EccErrors, GpuReading, MigDeviceReading, NvmlReadings
from gpuship.cuda.gpus import brand_from_nvml
from gpuship.cuda.version import cuda_version_from_nvml
from gpuship.errors import GpuUnavailable

# NVML error code -> the one-line verdict for problems that stop the probe. Codes from
# pynvml's NVML_ERROR_* constants (reference cuda-compat.md §6).
_FATAL_MESSAGES: dict[int, str] = {
    12: "no NVML library: libnvidia-ml.so.1 is not installed or not on the loader path "
    "(install the NVIDIA driver, or run the job where the driver is mounted)",
    9: "NVIDIA driver not loaded: libnvidia-ml is present but the kernel module is not "
    "(load it with 'modprobe nvidia' or reinstall the driver)",
    4: "insufficient permissions to query NVML (the user cannot open /dev/nvidia*; add it to "
    "the group that owns them or run the runner with access to the GPU devices)",
    18: "NVIDIA driver/library version mismatch (the driver was upgraded without a reboot; "
    "reboot the host or reload the nvidia kernel modules)",
    15: "a GPU has fallen off the bus (NVML reports GPU is lost; the host needs a reset)",
    28: "no GPU found by the driver (NVML reports GPU not found)",
}


def nvml_failure(error: Exception, during: str) -> GpuUnavailable:
    code = getattr(error, "value", None)
    message = _FATAL_MESSAGES.get(code) if isinstance(code, int) else None
    return GpuUnavailable(message or f"NVML failed during {during}: {error}")


def read_nvml() -> NvmlReadings:
    """Initialise NVML, read the driver and every GPU, shut NVML down again."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        raise nvml_failure(error, "initialisation") from None
    try:
        return _read_all(pynvml)
    except pynvml.NVMLError as error:
        raise nvml_failure(error, "the host reading") from None
    finally:
        # A failing shutdown changes nothing about readings already taken.
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()


def _read_all(nvml: Any) -> NvmlReadings:
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        raise GpuUnavailable(
            "no GPU visible: the NVIDIA driver is loaded but reports 0 devices "
            "(check 'nvidia-smi -L', NVIDIA_VISIBLE_DEVICES and the runner's device access)"
        )
    return NvmlReadings(
        driver_version=nvml.nvmlSystemGetDriverVersion(),
        cuda_driver_version=str(cuda_version_from_nvml(nvml.nvmlSystemGetCudaDriverVersion())),
        nvml_version=optional_reading(nvml, nvml.nvmlSystemGetNVMLVersion),
        gpus=[_read_gpu(nvml, index) for index in range(count)],
    )


def optional_reading(nvml: Any, call: Any, *args: Any) -> Any:
    """Call an NVML function whose answer may legitimately be absent on this GPU or driver."""
    try:
        return call(*args)
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound, nvml.NVMLError_NoData):
        return None


def _read_gpu(nvml: Any, index: int) -> GpuReading:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    brand = optional_reading(nvml, nvml.nvmlDeviceGetBrand, handle)
    pci = optional_reading(nvml, nvml.nvmlDeviceGetPciInfo, handle)
    persistence = optional_reading(nvml, nvml.nvmlDeviceGetPersistenceMode, handle)
    mig_mode = optional_reading(nvml, nvml.nvmlDeviceGetMigMode, handle)
    ecc_mode = optional_reading(nvml, nvml.nvmlDeviceGetEccMode, handle)
    ecc_enabled = None if ecc_mode is None else bool(ecc_mode[0])
    mig_enabled = None if mig_mode is None else bool(mig_mode[0])
    return GpuReading(
        index=index,
        name=nvml.nvmlDeviceGetName(handle),
        uuid=nvml.nvmlDeviceGetUUID(handle),
        brand=brand_from_nvml(brand) if brand is not None else "Unknown",
        brand_code=brand,
        compute_capability=f"{major}.{minor}",
        memory_total_bytes=int(memory.total),
        memory_free_bytes=int(memory.free),
        pci_bus_id=_pci_bus_id(pci),
        persistence_mode=None if persistence is None else bool(persistence),
        mig_enabled=mig_enabled,
        mig_pending=None if mig_mode is None else bool(mig_mode[1]),
        mig_devices=_read_mig_devices(nvml, handle) if mig_enabled else [],
        ecc_enabled=ecc_enabled,
        # Read counters unless ECC is known to be off: some drivers lack nvmlDeviceGetEccMode.
        ecc_errors=None if ecc_enabled is False else _read_ecc(nvml, handle),
    )


def _pci_bus_id(pci: Any) -> str | None:
    if pci is None:
        return None
    bus_id = pci.busId
    return bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)


def _read_mig_devices(nvml: Any, handle: Any) -> list[MigDeviceReading]:
    slots = optional_reading(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    devices: list[MigDeviceReading] = []
    for slot in range(slots):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError_NotFound:
            continue  # empty slot: MIG devices need not be contiguous
        memory = optional_reading(nvml, nvml.nvmlDeviceGetMemoryInfo, mig)
        devices.append(
            MigDeviceReading(
                index=len(devices),
                uuid=nvml.nvmlDeviceGetUUID(mig),
                memory_total_bytes=None if memory is None else int(memory.total),
                gpu_instance_id=optional_reading(nvml, nvml.nvmlDeviceGetGpuInstanceId, mig),
                compute_instance_id=optional_reading(
                    nvml, nvml.nvmlDeviceGetComputeInstanceId, mig
                ),
            )
        )
    return devices


def _read_ecc(nvml: Any, handle: Any) -> EccErrors | None:
    uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    errors = EccErrors(
        volatile_uncorrected=optional_reading(
            nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, uncorrected, nvml.NVML_VOLATILE_ECC
        ),
        aggregate_uncorrected=optional_reading(
            nvml, nvml.nvmlDeviceGetTotalEccErrors, handle, uncorrected, nvml.NVML_AGGREGATE_ECC
        ),
    )
    return None if errors == EccErrors() else errors
