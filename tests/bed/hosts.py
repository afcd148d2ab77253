"""Ready-made GPU host descriptions for the NVML stand-in (format: see bed.nvml).

Sources of the readings:
- CUDA driver version per driver branch: the toolkit each branch ships with, from the
  "CUDA Toolkit and Corresponding Driver Versions" table (shared/reference/cuda-compat.md §1.1):
  470 -> 11.4, 525 -> 12.0, 535 -> 12.2, 550 -> 12.4, 570 -> 12.8, 580 -> 13.0.
- Compute capabilities: developer.nvidia.com/cuda-gpus (cuda-compat.md §4.1).
- Names and memory totals (MiB): nvidia-smi tables published in public repositories
  ("Tesla T4 ... 15360MiB", "NVIDIA A100-SXM4-80GB ... 81920MiB", "NVIDIA H100 80GB HBM3 ...
  81559MiB", "NVIDIA H200 ... 143771MiB", "NVIDIA L4 ... 23034MiB", "NVIDIA GeForce RTX 4090
  ... 24564MiB").
- Brand: `nvidia-smi -q` shows "Product Brand: NVIDIA" for Tesla T4 (530.30.02) and
  H100 80GB HBM3 (560.35.03); GeForce cards report GeForce.
- PCI device ids: pci.ids (Debian 12 /usr/share/misc/pci.ids) for T4 1eb8, A100 SXM4 80GB
  20b2, H100 SXM5 80GB 2330, L4 27b8, RTX 4090 2684; H200 (2335) is newer than that file.
UUIDs are made up but stable (derived from the host and slot).

The host dicts are shared module constants: do not mutate them; use `derive()` for variants.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024

# pynvml constants, repeated so descriptions can be built without importing pynvml.
BRAND_GEFORCE = 5
BRAND_NVIDIA = 14
ARCH_TURING = 6
ARCH_AMPERE = 7
ARCH_ADA = 8
ARCH_HOPPER = 9
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18

CUDA_DRIVER_VERSION_BY_BRANCH = {
    470: 11040,
    525: 12000,
    535: 12020,
    550: 12040,
    570: 12080,
    580: 13000,
}


@dataclass(frozen=True)
class GpuModel:
    """What NVML reports that belongs to the GPU model rather than to one card."""

    name: str
    brand: int
    architecture: int
    compute_capability: tuple[int, int]
    memory_mib: int
    pci_device_id: int
    ecc: bool
    max_mig_devices: int | None = None


TESLA_T4 = GpuModel("Tesla T4", BRAND_NVIDIA, ARCH_TURING, (7, 5), 15360, 0x1EB810DE, True)
A100_SXM4_80GB = GpuModel(
    "NVIDIA A100-SXM4-80GB", BRAND_NVIDIA, ARCH_AMPERE, (8, 0), 81920, 0x20B210DE, True, 7
)
H100_80GB_HBM3 = GpuModel(
    "NVIDIA H100 80GB HBM3", BRAND_NVIDIA, ARCH_HOPPER, (9, 0), 81559, 0x233010DE, True, 7
)
H200 = GpuModel("NVIDIA H200", BRAND_NVIDIA, ARCH_HOPPER, (9, 0), 143771, 0x233510DE, True, 7)
L4 = GpuModel("NVIDIA L4", BRAND_NVIDIA, ARCH_ADA, (8, 9), 23034, 0x27B810DE, True)
RTX_4090 = GpuModel(
    "NVIDIA GeForce RTX 4090", BRAND_GEFORCE, ARCH_ADA, (8, 9), 24564, 0x268410DE, False
)


def fake_uuid(prefix: str, seed: str) -> str:
    """A stable UUID-shaped id, e.g. GPU-1a2b3c4d-...."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"{prefix}-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def mig_device(model: GpuModel, profile: str, memory_mib: int, seed: str) -> dict[str, Any]:
    """One MIG device description, e.g. profile "3g.40gb"."""
    return {
        "name": f"{model.name} MIG {profile}",
        "uuid": fake_uuid("MIG", seed),
        "memory_total": memory_mib * MIB,
        "memory_used": 0,
    }


def gpu(
    model: GpuModel,
    index: int = 0,
    *,
    seed: str = "",
    memory_used_mib: int = 0,
    mig_profiles: tuple[tuple[str, int], ...] | None = None,
) -> dict[str, Any]:
    """A GPU description; `mig_profiles` ((profile, MiB), ...) turns MIG on with those devices."""
    slot_seed = f"{seed}/{model.name}/{index}"
    described: dict[str, Any] = {
        "name": model.name,
        "uuid": fake_uuid("GPU", slot_seed),
        "brand": model.brand,
        "architecture": model.architecture,
        "compute_capability": list(model.compute_capability),
        "memory_total": model.memory_mib * MIB,
        "memory_used": memory_used_mib * MIB,
        "memory_reserved": 0,
        "pci_bus_id": f"00000000:{0x07 + index * 0x10:02X}:00.0",
        "pci_device_id": model.pci_device_id,
        "persistence_mode": 1,
    }
    if model.ecc:
        described["ecc_errors"] = {
            "volatile_corrected": 0,
            "volatile_uncorrected": 0,
            "aggregate_corrected": 0,
            "aggregate_uncorrected": 0,
        }
    if model.max_mig_devices is not None:
        described["max_mig_devices"] = model.max_mig_devices
        described["mig_mode"] = [1, 1] if mig_profiles else [0, 0]
        described["mig_devices"] = [
            mig_device(model, profile, memory, f"{slot_seed}/mig{number}")
            for number, (profile, memory) in enumerate(mig_profiles or ())
        ]
    elif mig_profiles:
        raise ValueError(f"{model.name} does not support MIG")
    return described


def host(driver_version: str, gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """A host description: driver, CUDA driver version of its branch, NVML version, GPUs."""
    branch = int(driver_version.split(".", maxsplit=1)[0])
    cuda = CUDA_DRIVER_VERSION_BY_BRANCH[branch]
    return {
        "driver_version": driver_version,
        "cuda_driver_version": cuda,
        "nvml_version": f"{cuda // 1000}.{driver_version}",
        "gpus": gpus,
    }


def single(model: GpuModel, driver_version: str) -> dict[str, Any]:
    """A host with one GPU of `model` on `driver_version`."""
    return host(driver_version, [gpu(model, seed=driver_version)])


def derive(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of `base` with top-level keys replaced (e.g. init_error=9, gpus=[])."""
    variant = copy.deepcopy(base)
    variant.update(changes)
    return variant


T4_470 = single(TESLA_T4, "470.256.02")
A100_525 = single(A100_SXM4_80GB, "525.147.05")
A100_535 = single(A100_SXM4_80GB, "535.230.02")
A100_550 = single(A100_SXM4_80GB, "550.144.03")
H100_535 = single(H100_80GB_HBM3, "535.230.02")
H100_570 = single(H100_80GB_HBM3, "570.195.03")
H200_580 = single(H200, "580.95.05")
L4_550 = single(L4, "550.144.03")
RTX4090_550 = single(RTX_4090, "550.144.03")
A100_MIG_550 = host(
    "550.144.03",
    [gpu(A100_SXM4_80GB, seed="mig", mig_profiles=(("3g.40gb", 40192), ("3g.40gb", 40192)))],
)
A100_T4_535 = host(
    "535.230.02", [gpu(A100_SXM4_80GB, 0, seed="mixed"), gpu(TESLA_T4, 1, seed="mixed")]
)
NO_GPU_550 = host("550.144.03", [])
DRIVER_NOT_LOADED = derive(A100_550, init_error=NVML_ERROR_DRIVER_NOT_LOADED)
NO_PERMISSION = derive(A100_550, init_error=NVML_ERROR_NO_PERMISSION)
DRIVER_MISMATCH = derive(A100_550, init_error=NVML_ERROR_LIB_RM_VERSION_MISMATCH)

HOSTS: dict[str, dict[str, Any]] = {
    "t4-470": T4_470,
    "a100-525": A100_525,
    "a100-535": A100_535,
    "a100-550": A100_550,
    "h100-535": H100_535,
    "h100-570": H100_570,
    "h200-580": H200_580,
    "l4-550": L4_550,
    "rtx4090-550": RTX4090_550,
    "a100-mig-550": A100_MIG_550,
    "a100-t4-535": A100_T4_535,
    "no-gpu-550": NO_GPU_550,
    "driver-not-loaded": DRIVER_NOT_LOADED,
    "no-permission": NO_PERMISSION,
    "driver-mismatch": DRIVER_MISMATCH,
}
