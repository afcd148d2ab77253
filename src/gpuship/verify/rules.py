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
