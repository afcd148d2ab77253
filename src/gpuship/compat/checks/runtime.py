"""GSV101: the container runtime can give a container this host's GPUs (a Docker runtime,
the runtime hook for `docker --gpus`, or CDI)."""

from __future__ import annotations

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import EXCLUDE_RUNNER, Check, Status
from gpuship.compat.config import VerifyConfig


def check(audit: HostAudit, config: VerifyConfig) -> Check:
    container = audit.container
    docker = container.docker
    if not config.require_gpu_runtime:
        return Check(
            rules.RUNTIME, Status.SKIP, "host", "not required (verify.require-gpu-runtime)"
        )
    ways = []
    if container.nvidia_runtime:
        runtimes = ", ".join(r for r in docker.runtimes if r.startswith("nvidia"))
        ways.append(f"Docker runtime {runtimes} (default: {docker.default_runtime})")
    hook = container.tool("nvidia-container-runtime-hook")
    if hook is not None and hook.path:
        ways.append("nvidia-container-runtime-hook on PATH (docker --gpus)")
    cdi = container.gpu_cdi_devices
    if cdi:
        ways.append(f"CDI devices {', '.join(cdi[:4])}{' ...' if len(cdi) > 4 else ''}")
    # CDI is the only way here, and the engine reports no CDI spec dirs: it does not use CDI
    # (Docker < 25, or the 'cdi' feature off), so `--device nvidia.com/gpu=...` is refused.
    if cdi and len(ways) == 1 and docker.reachable and not docker.cdi_spec_dirs:
        return Check(
            rules.RUNTIME,
            Status.WARN,
            "host",
            f"NVIDIA CDI devices exist ({', '.join(cdi[:4])}) but Docker "
            f"{docker.server_version or ''} reports no CDI spec dirs: it does not use CDI, so "
            "only a CDI-aware runtime (podman, containerd, nvidia-container-runtime) reaches them",
            fix="enable CDI in /etc/docker/daemon.json ('features': {'cdi': true}, Docker >= 25) "
            "or run 'nvidia-ctk runtime configure --runtime=docker' and restart the engine",
        )
    if ways and docker.reachable:
        return Check(
            rules.RUNTIME, Status.OK, "host", "GPUs reach containers through " + "; ".join(ways)
        )
    if ways:
        return Check(
            rules.RUNTIME,
            Status.WARN,
            "host",
            f"Docker engine not reachable ({docker.error}); GPU plumbing present: "
            + "; ".join(ways),
            fix="start the Docker engine or give the runner access to its socket",
        )
    setup = (
        "install nvidia-container-toolkit and run 'nvidia-ctk runtime configure --runtime=docker' "
        "(or 'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml' with CDI enabled), then "
        f"restart the engine, {EXCLUDE_RUNNER}"
    )
    if not docker.reachable:
        message = (
            f"Docker engine not reachable ({docker.error}) and no NVIDIA runtime, runtime hook "
            "or CDI spec: a container here gets no GPU"
        )
    else:
        runtimes = ", ".join(docker.runtimes) or "none"
        message = (
            f"GPUs cannot reach containers: Docker runtimes are [{runtimes}], no "
            "nvidia-container-runtime-hook on PATH and no NVIDIA CDI spec; the job would run "
            'on the CPU or fail with \'could not select device driver "" with capabilities: '
            "[[gpu]]'"
        )
    return Check(rules.RUNTIME, Status.FAIL, "host", message, fix=setup)
