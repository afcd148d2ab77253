"""Judge whether this host's GPU services come back by themselves after a reboot, a
`systemctl daemon-reload` or a driver update (rules GSV501-GSV507).

Pure: it takes the audit's readings. A reading that is None was not readable here: its rule
says "unknown" as a note, never a failure (an error finding must be certain).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Check, Status
from gpuship.compat.container import DockerReading
from gpuship.compat.readiness import GpuContainer, ReadinessReadings
from gpuship.compat.readings import GpuReading
from gpuship.verify import rules

HOST = "host"
# Restart policies under which dockerd starts the container again when it starts.
COMES_BACK = ("always", "unless-stopped")
DOCKER_UNITS = ("docker.service", "docker.socket")
ENABLED = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated")
CDI_REFRESH = ("nvidia-cdi-refresh.service", "nvidia-cdi-refresh.path")
PERSISTENCED = "nvidia-persistenced.service"
MIG_MANAGER = "nvidia-mig-manager.service"
# Toolkit modes in which the nvidia runtime hands devices to runc through the container's
# OCI spec (CDI), so the cgroup driver knows them and a daemon-reload keeps them.
CDI_MODES = ("cdi", "jit-cdi")
DEV_CHAR_FIX = (
    "run 'nvidia-ctk system create-dev-char-symlinks --create-all' and keep it at boot with "
    "the udev rule in the toolkit's docs, or give containers the GPUs through CDI "
    "('nvidia-ctk cdi generate', --device nvidia.com/gpu=all), or set "
    '"exec-opts": ["native.cgroupdriver=cgroupfs"] in daemon.json'
)


def readiness_checks(audit: HostAudit) -> tuple[Check, ...]:
    """Every readiness check of the audited host; none for an audit that predates them."""
    readiness = audit.container.readiness
    if readiness is None:
        return ()
    gpus = audit.nvml.gpus
    return (
        *restart_checks(readiness.gpu_containers),
        docker_at_boot(readiness),
        boot_order(readiness),
        daemon_reload_exposure(audit.container.docker, readiness),
        device_nodes(readiness.device_nodes, len(gpus)),
        persistence(gpus),
        mig_layout(gpus, readiness),
    )


def _unknown(rule: str, what: str) -> Check:
    return Check(rule, Status.NOTE, HOST, f"unknown: {what}")


def restart_checks(containers: list[GpuContainer] | None) -> tuple[Check, ...]:
    """GSV501: every running container given GPUs comes back when Docker starts again."""
    if containers is None:
        return (_unknown(rules.RESTART_POLICY, "the Docker engine could not be asked"),)
    if not containers:
        return (Check(rules.RESTART_POLICY, Status.OK, HOST, "no running container has GPUs"),)
    return tuple(_restart_check(container) for container in containers)


def _restart_check(container: GpuContainer) -> Check:
    subject = f"container {container.name}"
    if container.restart_policy in COMES_BACK:
        return Check(
            rules.RESTART_POLICY, Status.OK, subject, f"restart: {container.restart_policy}"
        )
    if container.compose_service:
        fix = (
            f"add 'restart: unless-stopped' to service {container.compose_service} of compose "
            f"project {container.compose_project}, then 'docker compose up -d'"
        )
    else:
        fix = (
            f"docker update --restart unless-stopped {container.name} (or run it from a "
            "systemd unit with Restart=always, deploy/model-service/)"
        )
    return Check(
        rules.RESTART_POLICY,
        Status.WARN,
        subject,
        f"restart policy '{container.restart_policy}': it stays down after a host or "
        "Docker restart",
        fix=fix,
    )


def docker_at_boot(readiness: ReadinessReadings) -> Check:
    """GSV502: boot starts Docker (its service, or its socket on the first request)."""
    states = [readiness.unit(name) for name in DOCKER_UNITS]
    if readiness.units is None or any(s is None or s.state is None for s in states):
        return _unknown(rules.DOCKER_AT_BOOT, "systemctl could not say whether Docker starts")
    words = {s.name: s.state for s in states if s is not None}
    if any(state in ENABLED for state in words.values()):
        shown = ", ".join(f"{name} {state}" for name, state in words.items())
        return Check(rules.DOCKER_AT_BOOT, Status.OK, HOST, shown)
    if all(state == "not-found" for state in words.values()):
        return _unknown(rules.DOCKER_AT_BOOT, "no docker.service unit (Docker not run by systemd)")
    return Check(
        rules.DOCKER_AT_BOOT,
        Status.FAIL,
        HOST,
        "Docker is not started at boot ("
        + ", ".join(f"{name} {state}" for name, state in words.items())
        + "): no container comes back after a reboot",
        fix="systemctl enable docker.service containerd.service",
    )


def boot_order(readiness: ReadinessReadings) -> Check:
    """GSV503: docker.service starts after the enabled NVIDIA units that prepare the GPUs."""
    if readiness.units is None:
        return _unknown(rules.BOOT_ORDER, "systemctl could not say which units start at boot")
    enabled = [
        name
        for name in (*CDI_REFRESH, PERSISTENCED)
        if (state := readiness.unit(name)) is not None and state.state in ENABLED
    ]
    if not enabled:
        return Check(rules.BOOT_ORDER, Status.OK, HOST, "no NVIDIA unit to order docker after")
    if readiness.docker_after is None:
        return _unknown(
            rules.BOOT_ORDER,
            f"the order of docker.service and {', '.join(enabled)} (systemd not running here)",
        )
    missing = [name for name in enabled if name not in readiness.docker_after]
    if not missing:
        return Check(
            rules.BOOT_ORDER, Status.OK, HOST, f"docker.service starts after {', '.join(enabled)}"
        )
    return Check(
        rules.BOOT_ORDER,
        Status.WARN,
        HOST,
        f"docker.service is not ordered after {', '.join(missing)}: at boot Docker may restart "
        "GPU containers before the CDI spec is written or the driver is ready",
        fix="systemctl edit docker.service, add '[Unit]' 'After=" + " ".join(missing) + "' "
        "'Wants=" + " ".join(missing) + "', then systemctl daemon-reload",
    )


def daemon_reload_exposure(docker: DockerReading, readiness: ReadinessReadings) -> Check:
    """GSV504: a `systemctl daemon-reload` leaves running GPU containers their devices."""
    driver = docker.cgroup_driver if docker.reachable else None
    if driver is None:
        return _unknown(rules.DAEMON_RELOAD, "Docker's cgroup driver could not be read")
    if driver != "systemd":
        return Check(
            rules.DAEMON_RELOAD,
            Status.OK,
            HOST,
            f"cgroup driver {driver}: systemd does not rewrite the containers' device rules",
        )
    # `--gpus` goes through moby's prestart hook whatever the runtime's mode says.
    hooked = any(c.gpus_via == "device-request" for c in readiness.gpu_containers or ())
    if readiness.toolkit_mode in CDI_MODES and not hooked:
        return Check(
            rules.DAEMON_RELOAD,
            Status.OK,
            HOST,
            f"toolkit mode {readiness.toolkit_mode}: devices are in the containers' specs",
        )
    nodes = [n for n in readiness.device_nodes or () if n != "nvidia-modeset"]
    links = readiness.dev_char_links
    if links is not None and nodes and set(nodes) <= set(links):
        return Check(
            rules.DAEMON_RELOAD, Status.OK, HOST, "/dev/char links name every NVIDIA device node"
        )
    if readiness.device_nodes is None or links is None:
        return _unknown(rules.DAEMON_RELOAD, "/dev or /dev/char could not be read")
    mode = readiness.toolkit_mode or "unknown (no config.toml read)"
    unlinked = sorted(set(nodes) - set(links))
    return Check(
        rules.DAEMON_RELOAD,
        Status.WARN,
        HOST,
        f"cgroup driver systemd, toolkit mode {mode}, no /dev/char link to "
        f"{', '.join(unlinked) or 'the NVIDIA devices'}: after 'systemctl daemon-reload' "
        "running GPU containers fail with 'Failed to initialize NVML: Unknown Error' until "
        "recreated",
        fix=DEV_CHAR_FIX,
    )


def device_nodes(nodes: list[str] | None, gpu_count: int) -> Check:
    """GSV505: /dev has the control node, one node per GPU, and the UVM nodes CUDA opens."""
    if nodes is None:
        return _unknown(rules.DEVICE_NODES, "/dev could not be listed")
    wanted = ["nvidiactl", *(f"nvidia{i}" for i in range(gpu_count)), "nvidia-uvm"]
    wanted.append("nvidia-uvm-tools")
    missing = [name for name in wanted if name not in nodes]
    if not missing:
        return Check(rules.DEVICE_NODES, Status.OK, HOST, f"{len(wanted)} NVIDIA device nodes")
    return Check(
        rules.DEVICE_NODES,
        Status.FAIL,
        HOST,
        f"missing {', '.join('/dev/' + n for n in missing)}: CUDA in containers fails to "
        "initialise (nvidia-uvm is loaded only on first use unless boot loads it)",
        fix="run 'nvidia-modprobe -u -c=0' now, and at boot load the modules: 'echo nvidia-uvm "
        "> /etc/modules-load.d/nvidia-uvm.conf' (or enable nvidia-persistenced)",
    )


def persistence(gpus: Sequence[GpuReading]) -> Check:
    """GSV506: persistence mode keeps the driver loaded between containers."""
    off = [str(gpu.index) for gpu in gpus if gpu.persistence_mode is False]
    unknown = [str(gpu.index) for gpu in gpus if gpu.persistence_mode is None]
    if off:
        return Check(
            rules.PERSISTENCE,
            Status.WARN,
            HOST,
            f"persistence mode off on GPU {', '.join(off)}: the driver unloads when no "
            "process holds the GPU, so every container start pays the initialisation and "
            "GPU state (clocks, ECC, MIG) can be lost",
            fix="systemctl enable --now nvidia-persistenced",
        )
    if unknown:
        return _unknown(rules.PERSISTENCE, f"persistence mode of GPU {', '.join(unknown)}")
    return Check(rules.PERSISTENCE, Status.OK, HOST, "persistence mode on")


def mig_layout(gpus: Sequence[GpuReading], readiness: ReadinessReadings) -> Check:
    """GSV507: where MIG is on, boot recreates the MIG instances (they do not survive one)."""
    mig = [str(gpu.index) for gpu in gpus if gpu.mig_enabled]
    if not mig:
        return Check(rules.MIG_LAYOUT, Status.OK, HOST, "MIG is off")
    state = readiness.unit(MIG_MANAGER)
    if state is None or state.state is None:
        what = f"whether boot recreates the MIG layout of GPU {', '.join(mig)}"
        return _unknown(rules.MIG_LAYOUT, what)
    if state.state in ENABLED:
        return Check(rules.MIG_LAYOUT, Status.OK, HOST, f"{MIG_MANAGER} {state.state}")
    return Check(
        rules.MIG_LAYOUT,
        Status.WARN,
        HOST,
        f"MIG is on for GPU {', '.join(mig)} and {MIG_MANAGER} is {state.state}: MIG "
        "instances do not survive a reboot, and no unit known to recreate them starts at boot",
        fix="install nvidia-mig-parted with its systemd service and a config of this layout, "
        "then systemctl enable nvidia-mig-manager.service",
    )
