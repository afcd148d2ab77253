"""The container side and the system of a GPU host as data: part of the host audit.

`gpuship audit` reads them (the `host` and `docker` adapters hold the readers) and `verify`,
`fleet` and `route` judge them, so, like the NVML readings, they accept exactly what they write.
"""

from __future__ import annotations

from pydantic import Field

from gpuship.compat.readiness import ReadinessReadings
from gpuship.compat.readings import Reading


class DockerReading(Reading):
    """What `docker info` says, or why it could not be asked."""

    reachable: bool
    error: str | None = None
    server_version: str | None = None
    runtimes: list[str] = Field(default_factory=list)
    default_runtime: str | None = None
    cdi_spec_dirs: list[str] = Field(default_factory=list)
    cdi_devices: list[str] = Field(
        default_factory=list, description="Devices the engine discovered (Docker >= 28)."
    )
    cgroup_driver: str | None = Field(
        default=None, description="'systemd' or 'cgroupfs' (docker info CgroupDriver)."
    )
    cgroup_version: str | None = Field(default=None, description="'1' or '2'.")


class CdiSpecReading(Reading):
    """One CDI spec file and the fully qualified devices it declares."""

    path: str
    kind: str | None = None
    devices: list[str] = Field(default_factory=list)
    error: str | None = None
    driver_versions: list[str] = Field(
        default_factory=list,
        description="Driver versions the spec names (libcuda.so.X, --host-driver-version=X): "
        "the driver it was generated for.",
    )


class ToolReading(Reading):
    """An NVIDIA container toolkit binary: where it is and the version it reports."""

    name: str
    path: str | None = None
    version: str | None = None


class UnitReading(Reading):
    """A systemd unit that regenerates a CDI spec, and whether boot starts it."""

    name: str
    path: str
    enabled: bool = Field(description="Linked from a *.wants/ directory: started at boot.")


class ContainerReadings(Reading):
    """Everything about how GPUs reach containers on this host."""

    docker: DockerReading
    cdi_specs: list[CdiSpecReading] = Field(default_factory=list)
    tools: list[ToolReading] = Field(default_factory=list)
    cdi_refresh_units: list[UnitReading] | None = Field(
        default=None,
        description="Units that run 'nvidia-ctk cdi generate'; None: not read (older audit).",
    )
    readiness: ReadinessReadings | None = Field(
        default=None, description="Restarts, reloads and boot order; None: not read (older audit)."
    )

    def tool(self, name: str) -> ToolReading | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    @property
    def nvidia_runtime(self) -> bool:
        """Docker has a runtime named like NVIDIA's (`nvidia`, `nvidia-cdi`, `nvidia-legacy`)."""
        return any(name.startswith("nvidia") for name in self.docker.runtimes)

    @property
    def gpu_cdi_devices(self) -> list[str]:
        """CDI devices of NVIDIA GPU kinds, from spec files and the engine's own discovery."""
        found = {
            device
            for spec in self.cdi_specs
            for device in spec.devices
            if device.startswith("nvidia.com/")
        }
        found.update(d for d in self.docker.cdi_devices if d.startswith("nvidia.com/"))
        return sorted(found)


class SystemReading(Reading):
    """Kernel, OS and machine of the host."""

    kernel: str
    os: str | None = None
    machine: str
