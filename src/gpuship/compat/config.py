"""The `verify:` section of gpuship.yaml: what a GPU job needs from the host it lands on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuship.compat.floor import DriverFloor
from gpuship.config.section import Section

# Where CDI specs (the NVIDIA Container Toolkit writes them, static or generated at boot) and
# systemd units live, for the audit's container checks; kept here, not in `host.container`,
# so reading the config does not import the host probes.
DEFAULT_CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
DEFAULT_UNIT_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)


class VerifyConfig(Section):
    """Host requirements checked by `gpuship verify` and `gpuship fleet`."""

    gpus: int = Field(default=1, ge=0, description="GPUs (or MIG devices) the job needs.")
    min_memory_gib: float | None = Field(
        default=None, gt=0, description="Total memory every used GPU must have, in GiB."
    )
    min_free_memory_gib: float | None = Field(
        default=None, gt=0, description="Free memory every used GPU must have now, in GiB."
    )
    mig: Literal["allow", "forbid", "require"] = Field(
        default="allow",
        description="MIG-enabled GPUs: allow them (MIG devices count), forbid, or require them.",
    )
    minor_version_compat: Literal["warn", "error"] = Field(
        default="warn",
        description="A driver older than the image's CUDA minor but in its family (runs with "
        "caveats: no PTX JIT, limited features).",
    )
    forward_compat: Literal["allow", "error"] = Field(
        default="allow",
        description="Running through the image's cuda-compat package on an older driver branch.",
    )
    ptx_jit: Literal["warn", "error"] = Field(
        default="warn",
        description="A GPU covered only by PTX (JIT-compiled at first start, slow).",
    )
    require_gpu_runtime: bool = Field(
        default=True,
        description="Fail when neither an NVIDIA Docker runtime nor a CDI spec gives containers "
        "the GPUs.",
    )
    cdi_spec_dirs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CDI_SPEC_DIRS),
        description="Where CDI specs are looked for (the engine's own CDISpecDirs are added).",
    )
    systemd_unit_dirs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_UNIT_DIRS),
        description="Where the audit looks for units that regenerate the CDI spec at boot.",
    )
    host_root: str = Field(
        default="/",
        description="The host's root directory, where the readiness checks read /dev, "
        "/etc/nvidia-container-runtime and the units ('systemctl --root'): '/', or where "
        "the host's / is mounted when gpuship runs in a container.",
    )
    driver_floor: DriverFloor = Field(
        default_factory=DriverFloor,
        description="The lowest driver the fleet (`default`) and each pool (`pools`, by runner "
        "label) keep: matrix refuses a cell above every floor, fleet, route and verify name a "
        "host below its floor.",
    )
