"""Take an audit of the host this process runs on (NVML + container side + system)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpuship.compat.audit import HostAudit, new_audit
from gpuship.compat.config import VerifyConfig
from gpuship.nvml.probe import read_nvml
from gpuship.verify.container import read_container_side, read_system


def audit_this_host(
    environ: Mapping[str, str], config: VerifyConfig, labels: Iterable[str] = ()
) -> HostAudit:
    """Read everything `verify` judges; NVML problems raise `GpuUnavailable` (exit 3)."""
    nvml = read_nvml()
    container = read_container_side(environ, config.cdi_spec_dirs, config.systemd_unit_dirs)
    return new_audit(nvml, container, read_system(), environ, labels)
