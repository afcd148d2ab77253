"""Small builders of host audits and image needs for verdict tables (pure data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.compat.container import (
    CdiSpecReading,
    ContainerReadings,
    DockerReading,
    SystemReading,
    ToolReading,
)
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.compat.readings import EccErrors, GpuReading, MigDeviceReading, NvmlReadings

GIB = 2**30


def gpu(
    index: int = 0,
    name: str = "NVIDIA A100-SXM4-80GB",
    brand: str = "Nvidia",
    cc: str = "8.0",
    memory_gib: float = 80,
    free_gib: float | None = None,
    mig_slices_gib: Sequence[float] | None = None,
    ecc_uncorrected: int | None = None,
) -> GpuReading:
    """One GPU reading; `mig_slices_gib` turns MIG on with devices of those sizes."""
    return GpuReading(
        index=index,
        name=name,
        uuid=f"GPU-{index:08d}-0000-0000-0000-000000000000",
        brand=brand,
        compute_capability=cc,
        memory_total_bytes=int(memory_gib * GIB),
        memory_free_bytes=int((memory_gib if free_gib is None else free_gib) * GIB),
        mig_enabled=None if mig_slices_gib is None else True,
        mig_devices=[
            MigDeviceReading(index=i, uuid=f"MIG-{index}-{i}", memory_total_bytes=int(s * GIB))
            for i, s in enumerate(mig_slices_gib or ())
        ],
        ecc_errors=None
        if ecc_uncorrected is None
        else EccErrors(volatile_uncorrected=ecc_uncorrected, aggregate_uncorrected=0),
    )


T4 = {"name": "Tesla T4", "brand": "Nvidia", "cc": "7.5", "memory_gib": 15}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "brand": "Nvidia", "cc": "8.0", "memory_gib": 80}
H100 = {"name": "NVIDIA H100 80GB HBM3", "brand": "Nvidia", "cc": "9.0", "memory_gib": 79.6}
H200 = {"name": "NVIDIA H200", "brand": "Nvidia", "cc": "9.0", "memory_gib": 140.4}
L4 = {"name": "NVIDIA L4", "brand": "Nvidia", "cc": "8.9", "memory_gib": 22.5}
RTX4090 = {"name": "NVIDIA GeForce RTX 4090", "brand": "GeForce", "cc": "8.9", "memory_gib": 24}
RTX3090 = {"name": "NVIDIA GeForce RTX 3090", "brand": "GeForce", "cc": "8.6", "memory_gib": 24}

# Driver branch -> (a released driver of it, the CUDA version NVML reports for it);
# CUDA per branch from the toolkit table (reference cuda-compat.md §1.1).
DRIVERS = {
    470: ("470.256.02", "11.4"),
    525: ("525.147.05", "12.0"),
    535: ("535.230.02", "12.2"),
    550: ("550.144.03", "12.4"),
    570: ("570.195.03", "12.8"),
    580: ("580.95.05", "13.0"),
}


def audit(
    branch: int,
    gpus: Sequence[GpuReading],
    *,
    runtimes: Sequence[str] = ("nvidia", "runc"),
    reachable: bool = True,
    cdi_devices: Sequence[str] = (),
    hook: bool = True,
    labels: Sequence[str] = (),
    cdi_spec_dirs: Sequence[str] = ("/etc/cdi", "/var/run/cdi"),
    toolkit_version: str | None = None,
) -> HostAudit:
    """A host audit on a driver of `branch` with these GPUs and container plumbing."""
    driver, cuda = DRIVERS[branch]
    docker = (
        DockerReading(
            reachable=True,
            server_version="28.2.2",
            runtimes=list(runtimes),
            default_runtime="runc",
            cdi_spec_dirs=list(cdi_spec_dirs),
        )
        if reachable
        else DockerReading(reachable=False, error="connection refused")
    )
    specs = (
        [
            CdiSpecReading(
                path="/etc/cdi/nvidia.yaml", kind="nvidia.com/gpu", devices=list(cdi_devices)
            )
        ]
        if cdi_devices
        else []
    )
    hook_path = "/usr/bin/nvidia-container-runtime-hook" if hook else None
    return HostAudit(
        taken_at="2026-11-29T17:00:00+00:00",
        runner=RunnerIdentity(hostname="gpu-host", labels=list(labels)),
        system=SystemReading(kernel="6.8.0", os="Ubuntu 24.04 LTS", machine="x86_64"),
        nvml=NvmlReadings(driver_version=driver, cuda_driver_version=cuda, gpus=list(gpus)),
        container=ContainerReadings(
            docker=docker,
            cdi_specs=specs,
            tools=[
                ToolReading(name="nvidia-container-runtime-hook", path=hook_path),
                ToolReading(
                    name="nvidia-ctk",
                    path="/usr/bin/nvidia-ctk" if toolkit_version else None,
                    version=toolkit_version,
                ),
            ],
        ),
    )


def image(
    env: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
) -> ImageGpuNeeds:
    """Needs of an image with this env and these labels."""
    return image_needs("registry.example/app:1", env or {}, labels or {})
