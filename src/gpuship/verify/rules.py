"""The verify stage's rule catalog (`gpuship verify`, `gpuship fleet`): SARIF, docs, help links.

The ids of the verdict's checks are `compat.rule_ids` (route judges with them too).
"""

from __future__ import annotations

from gpuship.compat.hosts import RULES as HOST_RULES
from gpuship.compat.rule_ids import (
    ARCH,
    CDI_SPEC,
    DEVICES,
    DRIVER,
    ECC,
    MEMORY,
    MIG,
    PLATFORM,
    REQUIRE,
    RUNTIME,
)
from gpuship.report import Rule, Severity

SMOKE = "GSV301"
RUNNING = "GSV302"
RESTART_POLICY = "GSV501"
DOCKER_AT_BOOT = "GSV502"
BOOT_ORDER = "GSV503"
DAEMON_RELOAD = "GSV504"
DEVICE_NODES = "GSV505"
PERSISTENCE = "GSV506"
MIG_LAYOUT = "GSV507"
FLEET_UNPLACEABLE = "GSV401"
FLEET_EXCLUDE = "GSV402"

RULES: tuple[Rule, ...] = (
    Rule(
        id=RUNTIME,
        name="verify-gpu-runtime",
        category="runtime",
        severity=Severity.ERROR,
        summary="Containers on this host can be given the GPUs",
        rationale="Without an NVIDIA runtime, the runtime hook or a CDI spec, a container "
        "starts without GPUs and frameworks silently fall back to the CPU.",
        fix="Install nvidia-container-toolkit, run 'nvidia-ctk runtime configure "
        "--runtime=docker' or 'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml', "
        "restart the engine.",
    ),
    Rule(
        id=DEVICES,
        name="verify-gpu-count",
        category="runtime",
        severity=Severity.ERROR,
        summary="The host offers as many GPUs as the job needs (verify.gpus)",
        fix="Exclude this runner label for the job, or lower verify.gpus.",
    ),
    Rule(
        id=MIG,
        name="verify-mig",
        category="runtime",
        severity=Severity.ERROR,
        summary="MIG mode matches verify.mig and MIG-enabled GPUs have MIG devices",
        rationale="A MIG-enabled GPU without instances shows CUDA no device at all.",
        fix="Disable MIG ('nvidia-smi -i N -mig 0'), create instances, or exclude the runner.",
    ),
    Rule(
        id=MEMORY,
        name="verify-gpu-memory",
        category="runtime",
        severity=Severity.ERROR,
        summary="Every GPU the job uses has the memory verify.min-memory-gib asks for",
        fix="Exclude this runner label for the job.",
    ),
    Rule(
        id=ECC,
        name="verify-ecc",
        category="runtime",
        severity=Severity.WARNING,
        summary="No uncorrected ECC errors since the driver loaded",
        rationale="Uncorrected ECC errors make results wrong or jobs crash mid-run.",
        fix="Run 'dcgmi diag -r 1' and drain the node if errors persist.",
    ),
    Rule(
        id=CDI_SPEC,
        name="verify-cdi-spec-current",
        category="runtime",
        severity=Severity.ERROR,
        summary="The NVIDIA CDI spec was generated for the driver now loaded, and is "
        "regenerated at boot",
        rationale="A CDI spec mounts the driver's versioned libraries (libcuda.so.550.54.15); "
        "after a driver update and reboot a spec left from the old driver makes every "
        "container given GPUs through CDI fail to start.",
        fix="Run 'nvidia-ctk cdi generate --output=<spec path>' and enable the toolkit's "
        "nvidia-cdi-refresh service (v1.18.0 on) so it is regenerated at boot.",
    ),
    Rule(
        id=REQUIRE,
        name="verify-nvidia-require",
        category="cuda",
        severity=Severity.ERROR,
        summary="The image's NVIDIA_REQUIRE_* constraints hold on this host",
        rationale="In legacy mode nvidia-container-cli refuses to start the container; in "
        "CDI and JIT-CDI modes nothing checks them and CUDA fails inside the job.",
        fix="Install a driver that satisfies the constraint or use an image variant for an "
        "older CUDA.",
    ),
    Rule(
        id=DRIVER,
        name="verify-driver",
        category="cuda",
        severity=Severity.ERROR,
        summary="The driver can run the image's effective CUDA version",
        rationale="A driver older than the CUDA the image needs fails with 'CUDA driver "
        "version is insufficient for CUDA runtime version' after the job took its slot.",
        fix="Install the driver branch named in the finding, or use an image built for the "
        "host's CUDA.",
    ),
    Rule(
        id=ARCH,
        name="verify-arch",
        category="cuda",
        severity=Severity.ERROR,
        summary="Each GPU's compute capability is covered by SASS (or JIT-able PTX)",
        rationale="torch.cuda.is_available() is True even when no kernel matches; the first "
        "kernel launch fails with 'no kernel image is available for execution on the device'.",
        fix="Add the GPU's architecture to the arch list the image is built with.",
    ),
    Rule(
        id=PLATFORM,
        name="verify-platform",
        category="runtime",
        severity=Severity.ERROR,
        summary="The image has a variant for the host's CPU architecture",
        rationale="An amd64-only image on an arm64 GPU runner (GH200, Grace) fails with 'exec "
        "format error' at its first process, after the job took the GPU.",
        fix="Build and push the image for the host's platform too (docker buildx "
        "--platform linux/amd64,linux/arm64), or route the job to a runner of the image's.",
    ),
    Rule(
        id=SMOKE,
        name="verify-smoke",
        category="runtime",
        severity=Severity.ERROR,
        summary="The image starts with GPUs requested and sees a GPU (--smoke)",
        fix="See the probe output in the finding.",
    ),
    Rule(
        id=RUNNING,
        name="verify-running-containers",
        category="runtime",
        severity=Severity.ERROR,
        summary="Every running container started with GPUs still reaches them (--running)",
        rationale="After a 'systemctl daemon-reload' on a host with the systemd cgroup driver "
        "and the legacy runtime hook, running containers lose access to the GPU device nodes "
        "and fail with 'Failed to initialize NVML: Unknown Error' until recreated "
        "(NVIDIA/nvidia-container-toolkit#48, #1227). A fresh container (--smoke) works, so "
        "only a check inside the running containers sees it.",
        fix="Recreate the container named in the finding ('docker compose up -d "
        "--force-recreate SERVICE' or 'docker rm -f NAME' and start it again); the lasting "
        "fix for the host is GSV504's.",
        limits="The check runs inside the container with what it has: the device nodes, "
        "nvidia-smi (the toolkit mounts it with the utility capability) and Python's ctypes "
        "with libnvidia-ml; a container with none of them is checked by its device nodes only.",
    ),
    Rule(
        id=RESTART_POLICY,
        name="verify-restart-policy",
        category="runtime",
        severity=Severity.WARNING,
        summary="Running containers started with GPUs come back when Docker starts again",
        rationale="A container without 'restart: unless-stopped' or 'always' stays down after "
        "a reboot, a Docker upgrade or a dockerd restart; the model service is gone until "
        "someone starts it by hand.",
        fix="Compose: 'restart: unless-stopped' on the service; docker run: 'docker update "
        "--restart unless-stopped NAME'; or a systemd unit with Restart=always "
        "(deploy/model-service/).",
        limits="A container run by a systemd unit (docker run --rm under Restart=always) comes "
        "back by the unit, which this rule cannot see: set the container's policy or "
        "turn the rule off for such hosts.",
    ),
    Rule(
        id=DOCKER_AT_BOOT,
        name="verify-docker-at-boot",
        category="runtime",
        severity=Severity.ERROR,
        summary="Boot starts Docker (docker.service or docker.socket enabled)",
        rationale="With Docker disabled, no container with a restart policy comes back after "
        "a reboot and the runner takes no GPU job.",
        fix="systemctl enable docker.service containerd.service",
        limits="Read with 'systemctl is-enabled'; a host without systemctl, or without a "
        "docker unit (Docker started another way), is unknown.",
    ),
    Rule(
        id=BOOT_ORDER,
        name="verify-boot-order",
        category="runtime",
        severity=Severity.WARNING,
        summary="docker.service starts after the enabled NVIDIA units (CDI refresh, "
        "persistence daemon)",
        rationale="dockerd restarts 'restart: always' containers as soon as it starts; before "
        "the CDI spec is written they fail with 'could not select device driver \"cdi\"' "
        "(moby/moby#49989), and a CDI refresh unit not ordered before docker.service races it "
        "(NixOS/nixpkgs#353059).",
        fix="'systemctl edit docker.service': [Unit] After=nvidia-cdi-refresh.service "
        "nvidia-persistenced.service and Wants= the same, then 'systemctl daemon-reload'.",
        limits="The order is read from the running systemd ('systemctl show -p After "
        "docker.service'); where systemd is not PID 1 it is unknown.",
    ),
    Rule(
        id=DAEMON_RELOAD,
        name="verify-daemon-reload",
        category="runtime",
        severity=Severity.WARNING,
        summary="A 'systemctl daemon-reload' leaves running GPU containers their devices",
        rationale="With Docker's systemd cgroup driver, the legacy runtime hook grants the "
        "GPU devices behind systemd's back; the next daemon-reload rewrites the container's "
        "device rules from what systemd knows and the container loses the GPU: 'Failed to "
        "initialize NVML: Unknown Error' (NVIDIA/nvidia-container-toolkit#48, still "
        "reported in #1227). /dev/char links to the NVIDIA nodes let systemd resolve them; "
        "CDI puts the devices in the container's spec.",
        fix="'nvidia-ctk system create-dev-char-symlinks --create-all' (and the toolkit's udev "
        'rule to keep them), or CDI (mode = "cdi" in '
        "/etc/nvidia-container-runtime/config.toml), or the cgroupfs driver in daemon.json; "
        "then recreate the GPU containers.",
        limits="Judged from Docker's cgroup driver, the toolkit mode in config.toml and "
        "/dev/char; containers given GPUs with --gpus use the runtime hook whatever the mode.",
    ),
    Rule(
        id=DEVICE_NODES,
        name="verify-device-nodes",
        category="runtime",
        severity=Severity.ERROR,
        summary="/dev has nvidiactl, one nvidiaN per GPU, nvidia-uvm and nvidia-uvm-tools",
        rationale="nvidia-uvm is loaded on first use only; at boot, before any CUDA process "
        "ran as root, /dev/nvidia-uvm is absent, a CDI spec generated then lacks it, and "
        "containers fail to initialise CUDA (NVIDIA/nvidia-docker#526).",
        fix="'nvidia-modprobe -u -c=0' now; at boot load nvidia-uvm "
        "(/etc/modules-load.d/nvidia-uvm.conf) before the CDI refresh and Docker.",
    ),
    Rule(
        id=PERSISTENCE,
        name="verify-persistence-mode",
        category="runtime",
        severity=Severity.WARNING,
        summary="Persistence mode is on for every GPU",
        rationale="Without it the driver tears the GPU state down when the last process "
        "exits: every container start pays the initialisation, and settings made at boot "
        "(application clocks, compute mode) are lost.",
        fix="systemctl enable --now nvidia-persistenced",
    ),
    Rule(
        id=MIG_LAYOUT,
        name="verify-mig-layout-at-boot",
        category="runtime",
        severity=Severity.WARNING,
        summary="Where MIG is on, boot recreates the MIG instances",
        rationale="MIG mode survives a reboot, its GPU and compute instances do not: after a "
        "reboot a MIG-enabled GPU offers no device to CUDA until the layout is created again.",
        fix="Install nvidia-mig-parted with its systemd service (nvidia-mig-manager.service) "
        "and a config of this layout; enable it.",
        limits="Only nvidia-mig-manager.service is known to recreate a layout; another unit "
        "that does reads as missing, and no systemctl reads as unknown.",
    ),
    Rule(
        id=FLEET_UNPLACEABLE,
        name="verify-fleet-unplaceable",
        category="runtime",
        severity=Severity.ERROR,
        summary="Every image can run on at least one runner of the fleet",
        fix="Upgrade the driver on some runners, or build a variant for an older CUDA or "
        "with the fleet's GPU architectures.",
    ),
    Rule(
        id=FLEET_EXCLUDE,
        name="verify-fleet-exclude",
        category="runtime",
        severity=Severity.WARNING,
        summary="A runner that cannot run an image is excluded from its jobs",
        fix="Exclude the runner label named in the finding for that image's jobs.",
    ),
    *HOST_RULES,
)
