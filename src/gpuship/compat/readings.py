"""NVML readings as data: the driver, its CUDA version and every GPU, with a stable schema.

These models are what `gpuship audit` writes (the nvml adapter fills them) and `verify`,
`fleet` and `route` read back, so they accept exactly what they write (extra keys are an
error) and carry no behaviour beyond small derived values.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Reading(BaseModel):
    """A part of the host audit: it accepts exactly the keys it writes, and is not changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class MigDeviceReading(Reading):
    """One MIG device (a GPU instance + compute instance) carved out of a GPU."""

    index: int = Field(description="Position among the parent GPU's MIG devices.")
    uuid: str = Field(description="MIG device UUID ('MIG-...').")
    memory_total_bytes: int | None = Field(default=None, description="Memory of this slice.")
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


class EccErrors(Reading):
    """Uncorrected ECC error counts (volatile = since last driver load)."""

    volatile_uncorrected: int | None = None
    aggregate_uncorrected: int | None = None


class GpuReading(Reading):
    """One physical GPU as NVML reports it."""

    index: int
    name: str
    uuid: str
    brand: str = Field(description="libnvidia-container brand string (Tesla, GeForce, ...).")
    brand_code: int | None = Field(default=None, description="Raw NVML brand number.")
    compute_capability: str = Field(description="'major.minor', e.g. '8.0'.")
    memory_total_bytes: int
    memory_free_bytes: int | None = None
    pci_bus_id: str | None = None
    persistence_mode: bool | None = Field(default=None, description="None: not supported.")
    mig_enabled: bool | None = Field(default=None, description="None: GPU has no MIG.")
    mig_pending: bool | None = None
    mig_devices: list[MigDeviceReading] = Field(default_factory=list)
    ecc_enabled: bool | None = None
    ecc_errors: EccErrors | None = None

    @property
    def sm(self) -> int:
        """Compute capability as the integer nvcc uses in `sm_XY` (8.6 -> 86)."""
        major, _, minor = self.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)

    @property
    def memory_total_gib(self) -> float:
        return self.memory_total_bytes / 2**30


class NvmlReadings(Reading):
    """What the driver reports about the host: versions and every GPU."""

    driver_version: str = Field(description="e.g. '550.54.15'.")
    cuda_driver_version: str = Field(description="Highest CUDA the driver supports, e.g. '12.4'.")
    nvml_version: str | None = None
    gpus: list[GpuReading]

    @property
    def driver_branch(self) -> int:
        """The driver's major number, the branch name NVIDIA uses (R535 -> 535)."""
        return int(self.driver_version.split(".", 1)[0])
