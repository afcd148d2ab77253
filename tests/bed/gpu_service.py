"""A model service container that "has a GPU" on a GPU-less machine, for the readiness tests.

What stands in for what (each a real program; the GPU is what is missing):
- the GPU: host character devices mapped in under NVIDIA names (`/dev/zero` as
  `/dev/nvidiactl`, `/dev/full` as `/dev/nvidia0`), so the container's device cgroup has rules
  for them exactly as the runtime hook grants the real nodes;
- NVML in the container: the NVML stand-in (`tests/nvml_stub/nvml_stub.c`), whose nvmlInit
  opens those nodes as the real library does, and a stand-in `nvidia-smi -L` built from C
  over it (`tests/nvml_stub/nvidia_smi_stub.c`);
- the NVIDIA runtime hook: a script on dockerd's PATH named `nvidia-container-runtime-hook`,
  so dockerd registers its `nvidia` device driver and `--gpus` requests work (moby
  daemon/nvidia_linux.go); it grants nothing itself, the mapped devices above do.
The image holds dash, sleep, their libc and loader from this machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bed.docker_engine import DockerEngine
from bed.images import FileSpec, build_scratch_image
from bed.nvml import CFLAGS, SONAME, build_stub

SMI_SOURCE = Path(__file__).resolve().parents[1] / "nvml_stub" / "nvidia_smi_stub.c"
IMAGE = "bed/gpu-service:1"
LIBS = "/lib/gpu"
# Host device -> the NVIDIA node it stands for in the container (major 1: mem devices).
DEVICES = {"/dev/zero": "/dev/nvidiactl", "/dev/full": "/dev/nvidia0"}
DEVICE_NUMBERS = {"/dev/nvidiactl": "1:5", "/dev/nvidia0": "1:7"}
HOOK = "nvidia-container-runtime-hook"
DESCRIPTION = {
    "driver_version": "550.54.15",
    "cuda_driver_version": 12040,
    "nvml_version": "12.550.54.15",
    "device_nodes": sorted(DEVICES.values()),
    "gpus": [
        {
            "name": "NVIDIA A100-SXM4-80GB",
            "uuid": "GPU-3f1e2d4c-0000-0000-0000-000000000001",
            "brand": 14,
            "compute_capability": [8, 0],
            "memory_total": 85899345920,
        }
    ],
}


def hook_dir(directory: Path) -> Path:
    """A directory holding the runtime hook stand-in, for dockerd's PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    hook = directory / HOOK
    hook.write_text("#!/bin/sh\n# stand-in: the devices are mapped by the test\nexit 0\n")
    hook.chmod(0o755)
    return directory


def build_gpu_service_image(engine: DockerEngine, cache_dir: Path) -> str:
    """Build IMAGE in `engine`: a shell, sleep, the NVML stand-in and nvidia-smi over it."""
    stub_dir = build_stub(cache_dir)
    # Beside the library it links to, so a new stand-in source gives a new nvidia-smi too.
    smi = stub_dir / "nvidia-smi"
    if not smi.exists():
        subprocess.run(
            [
                "gcc",
                *[
                    f
                    for f in CFLAGS
                    if f.startswith(("-std", "-O", "-W")) and f != f"-Wl,-soname,{SONAME}"
                ],
                "-o",
                str(smi),
                str(SMI_SOURCE),
                f"-L{stub_dir}",
                f"-l:{SONAME}",
            ],
            check=True,
        )

    def binary(path: str) -> FileSpec:
        return FileSpec(Path(path).read_bytes(), mode=0o755)

    files: dict[str, bytes | FileSpec] = {
        "bin/sh": binary(shutil.which("dash") or "/bin/dash"),
        "bin/sleep": binary(shutil.which("sleep") or "/usr/bin/sleep"),
        "usr/bin/nvidia-smi": binary(str(smi)),
        "lib64/ld-linux-x86-64.so.2": binary("/lib64/ld-linux-x86-64.so.2"),
        f"{LIBS[1:]}/libc.so.6": binary("/lib/x86_64-linux-gnu/libc.so.6"),
        f"{LIBS[1:]}/{SONAME}": binary(str(stub_dir / SONAME)),
        "etc/fake-nvml.json": json.dumps(DESCRIPTION).encode(),
    }
    build_scratch_image(
        engine,
        IMAGE,
        [files],
        env={
            "PATH": "/usr/bin:/bin",
            "LD_LIBRARY_PATH": LIBS,
            "GPUSHIP_FAKE_NVML": "/etc/fake-nvml.json",
            "NVIDIA_VISIBLE_DEVICES": "all",
        },
        extra_lines=['CMD ["/bin/sleep", "infinity"]'],
    )
    return IMAGE


def run_gpu_service(engine: DockerEngine, name: str, **options: Any) -> Any:
    """Start IMAGE as `name` with GPUs requested like `--gpus all` and the device nodes
    mapped; `options` go to docker-py (restart_policy=, labels=...)."""
    from docker.types import DeviceRequest

    return engine.client.containers.run(
        IMAGE,
        name=name,
        detach=True,
        network_mode="none",
        device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])],
        devices=[f"{host}:{inside}:rwm" for host, inside in DEVICES.items()],
        **options,
    )


def deny_device(container_id: str, node: str) -> Path:
    """Take the container's access to `node` away as a `systemctl daemon-reload` does under
    the systemd cgroup driver: a deny rule in its device cgroup (cgroup v1 devices controller;
    cgroup v2 would need the BPF device program replaced). The rule file written."""
    rule = Path("/sys/fs/cgroup/devices/docker") / container_id / "devices.deny"
    rule.write_text(f"c {DEVICE_NUMBERS[node]} rwm\n")
    return rule
