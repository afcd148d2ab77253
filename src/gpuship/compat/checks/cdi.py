"""GSV106: the CDI spec was generated for the loaded driver, and is regenerated at boot."""

from __future__ import annotations

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status

# tmpfs on every systemd host: a spec there was written since the last boot.
_VOLATILE_DIRS = ("/run/", "/var/run/")


def checks(audit: HostAudit) -> list[Check]:
    container = audit.container
    driver = audit.nvml.driver_version
    specs = [
        spec
        for spec in container.cdi_specs
        if spec.kind and spec.kind.startswith("nvidia.com/") and spec.driver_versions
    ]
    checks = []
    for spec in specs:
        named = ", ".join(spec.driver_versions)
        if spec.driver_versions != [driver]:
            checks.append(
                Check(
                    rules.CDI_SPEC,
                    Status.FAIL,
                    "host",
                    f"CDI spec {spec.path} was generated for driver {named} but driver {driver} "
                    "is loaded: every container given GPUs through CDI fails to start (its "
                    "mounts name driver libraries that no longer exist)",
                    fix=f"regenerate it with 'sudo nvidia-ctk cdi generate --output={spec.path}' "
                    f"and enable regeneration at boot ({_REFRESH_FIX}), {EXCLUDE_RUNNER}",
                )
            )
        else:
            checks.append(
                Check(
                    rules.CDI_SPEC,
                    Status.OK,
                    "host",
                    f"CDI spec {spec.path} was generated for the loaded driver {driver}",
                )
            )
    lasting = [s.path for s in specs if not s.path.startswith(_VOLATILE_DIRS)]
    units = container.cdi_refresh_units
    if lasting and units is not None and not any(unit.enabled for unit in units):
        checks.append(
            Check(
                rules.CDI_SPEC,
                Status.WARN,
                "host",
                f"nothing regenerates {', '.join(lasting)} at boot (no enabled "
                "nvidia-cdi-refresh.service or unit running 'nvidia-ctk cdi generate'): after the "
                "next driver update and reboot it names the old driver and GPU containers fail",
                fix=_REFRESH_FIX,
            )
        )
    return checks


_REFRESH_FIX = (
    "'sudo systemctl enable --now nvidia-cdi-refresh.path nvidia-cdi-refresh.service' "
    "(NVIDIA Container Toolkit >= 1.18.0), or a unit that runs 'nvidia-ctk cdi generate' at boot"
)
