"""A GPU host's readiness to bring its services back by itself, as data: part of the host audit.

What decides whether a model service comes back after a reboot, a `systemctl daemon-reload` or
a driver update still seeing its GPUs: whether boot starts Docker and the NVIDIA units (and in
which order), the device nodes, how device access reaches containers (cgroup driver, toolkit
mode, `/dev/char` links), and the restart policy of the containers given GPUs. `host/` and
`docker/` read them; the verify stage judges them (`verify/readiness.py`). Every field is
`None` when it could not be read: the judge says "unknown", never a failure.
"""

from __future__ import annotations

from pydantic import Field

from gpuship.compat.readings import Reading


class UnitState(Reading):
    """One systemd unit and what `systemctl is-enabled` says of it."""

    name: str
    state: str | None = Field(
        description="'enabled', 'disabled', 'static', 'masked', 'not-found', ...; "
        "None: systemctl could not say."
    )


class GpuContainer(Reading):
    """A running container that was started with GPUs, and how it comes back."""

    id: str
    name: str
    image: str
    gpus_via: str = Field(
        description="'device-request' (--gpus), 'cdi' (--device nvidia.com/gpu=...) or "
        "'nvidia-runtime' (--runtime nvidia with NVIDIA_VISIBLE_DEVICES)."
    )
    restart_policy: str = Field(description="HostConfig.RestartPolicy.Name; 'no' when unset.")
    compose_project: str | None = None
    compose_service: str | None = None


class ReadinessReadings(Reading):
    """Everything read about whether this host's GPU services survive restarts and reloads."""

    units: list[UnitState] | None = Field(
        default=None, description="Boot state of docker and the NVIDIA units; None: not read."
    )
    docker_after: list[str] | None = Field(
        default=None,
        description="Units docker.service is ordered after ('systemctl show -p After'); None: "
        "systemd could not be asked (not booted with systemd, no D-Bus).",
    )
    toolkit_mode: str | None = Field(
        default=None,
        description="nvidia-container-runtime mode in config.toml ('auto' when the key is "
        "absent); None: no config file or not readable.",
    )
    device_nodes: list[str] | None = Field(
        default=None, description="/dev/nvidia* names present; None: /dev not readable."
    )
    dev_char_links: list[str] | None = Field(
        default=None,
        description="NVIDIA device nodes a /dev/char/MAJOR:MINOR link points to; None: not read.",
    )
    gpu_containers: list[GpuContainer] | None = Field(
        default=None, description="Running containers started with GPUs; None: engine not read."
    )

    def unit(self, name: str) -> UnitState | None:
        """The reading of one unit, if units were read."""
        return next((u for u in self.units or () if u.name == name), None)
