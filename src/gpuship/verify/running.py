"""`verify --running`: check from inside each running container that was started with GPUs
that it still reaches them, without pulling or starting anything.

A container that lost its GPUs (a `systemctl daemon-reload` under the systemd cgroup driver
with the legacy runtime hook, NVIDIA/nvidia-container-toolkit#48; a driver reloaded under it)
still runs; only a check inside it sees it. The probe is a POSIX shell script run with
`docker exec`: it opens every NVIDIA device node (a device rule taken away makes open fail
with EPERM), then asks NVML through nvidia-smi (which the toolkit mounts with the `utility`
capability) or through Python's ctypes.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuship.compat.checks.base import Check, Status
from gpuship.compat.readiness import GpuContainer
from gpuship.docker.containers import gpu_containers
from gpuship.docker.engine import Engine, EngineRefused
from gpuship.errors import DockerUnavailable
from gpuship.verify import rules

EXEC_TIMEOUT_S = 60

NVML_PROBE = r"""
import ctypes, sys
try:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
except OSError:
    print("gpuship-running: device nodes open; no libnvidia-ml in the container to ask NVML")
    sys.exit(0)
nvml.nvmlErrorString.restype = ctypes.c_char_p
rc = nvml.nvmlInit_v2()
if rc != 0:
    print("gpuship-running: Failed to initialize NVML:", nvml.nvmlErrorString(rc).decode())
    sys.exit(12)
count = ctypes.c_uint(0)
rc = nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
if rc != 0 or count.value < 1:
    print("gpuship-running: NVML sees no GPU:", nvml.nvmlErrorString(rc).decode()); sys.exit(14)
print("gpuship-running: NVML sees", count.value, "GPU(s)")
"""

PROBE_SCRIPT = (
    "found=0\n"
    "for d in /dev/nvidiactl /dev/nvidia[0-9]* /dev/nvidia-uvm; do\n"
    '  [ -e "$d" ] || continue\n'
    "  found=1\n"
    '  ( : <"$d" ) 2>/dev/null || '
    '{ echo "gpuship-running: cannot open $d: device access taken away"; exit 21; }\n'
    "done\n"
    '[ "$found" = 1 ] || { echo "gpuship-running: no /dev/nvidia* device in the container"; '
    "exit 11; }\n"
    "if command -v nvidia-smi >/dev/null 2>&1; then\n"
    '  out=$(nvidia-smi -L 2>&1) || { echo "gpuship-running: nvidia-smi: $out"; exit 12; }\n'
    '  echo "gpuship-running: $out"; exit 0\n'
    "fi\n"
    "PY=$(command -v python3 || command -v python || true)\n"
    '[ -n "$PY" ] || { echo "gpuship-running: device nodes open; no nvidia-smi or python to '
    'ask NVML"; exit 0; }\n'
    'exec "$PY" -c "$GPUSHIP_NVML_PROBE"\n'
)

_LASTING_FIX = "then fix the host so it does not happen again (GSV504)"


def check_running(environ: Mapping[str, str]) -> tuple[Check, ...]:
    """One check per running container given GPUs (one OK check when there is none)."""
    try:
        with Engine.connect(environ, timeout=EXEC_TIMEOUT_S) as engine:
            containers = gpu_containers(engine.running_containers())
            if not containers:
                return (Check(rules.RUNNING, Status.OK, "host", "no running container has GPUs"),)
            return tuple(_check(engine, container) for container in containers)
    except (DockerUnavailable, EngineRefused) as error:
        return (
            Check(
                rules.RUNNING,
                Status.FAIL,
                "host",
                f"running containers not checked: {error}",
                fix="start Docker, or run as a user that may reach its socket",
            ),
        )


def _check(engine: Engine, container: GpuContainer) -> Check:
    subject = f"container {container.name}"
    try:
        code, output = engine.exec(
            container.id,
            ["/bin/sh", "-c", PROBE_SCRIPT],
            {"GPUSHIP_NVML_PROBE": NVML_PROBE},
        )
    except EngineRefused as error:
        return Check(
            rules.RUNNING,
            Status.FAIL,
            subject,
            f"the check could not run in it: {error.message}",
            fix="a container without /bin/sh cannot be checked from inside; check it with "
            "its own healthcheck",
        )
    return judge_probe(container, code, output)


def judge_probe(container: GpuContainer, code: int, output: str) -> Check:
    """The probe's exit code and output as a check on the container (pure)."""
    subject = f"container {container.name}"
    lines = [line.removeprefix("gpuship-running: ") for line in output.splitlines() if line.strip()]
    said = " | ".join(lines[-3:]) or "(no output)"
    if code == 0:
        return Check(rules.RUNNING, Status.OK, subject, said)
    return Check(
        rules.RUNNING,
        Status.FAIL,
        subject,
        f"lost its GPUs ({container.image}, {container.gpus_via}): {said}",
        fix=f"{recreate(container)}; {_LASTING_FIX}",
    )


def recreate(container: GpuContainer) -> str:
    """How to recreate the container: compose knows how it was made; plain docker does not."""
    if container.compose_service:
        return (
            f"recreate it: docker compose -p {container.compose_project} up -d "
            f"--force-recreate {container.compose_service}"
        )
    return f"recreate it: docker rm -f {container.name} and run it again with the same options"
