"""`verify --smoke`: start the image with GPUs requested and run a tiny probe inside it.

Catches what readings cannot: the container starting without a GPU (silent CPU fallback),
CUDA failing to initialise, torch not seeing the device or having no kernel for it.
An adapter over the docker SDK; the probe is a POSIX shell script so it runs in any image
with /bin/sh, and uses Python (ctypes, then torch if installed) when the image has it.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuship.compat.checks.base import Check, Status
from gpuship.docker.engine import Container, Engine, EngineRefused, GpuRequest, ImageMissing
from gpuship.errors import DockerUnavailable
from gpuship.verify import rules

SMOKE_TIMEOUT_S = 120

PYTHON_PROBE = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as error:
    print("gpuship-smoke: libcuda.so.1 not in the container:", error); sys.exit(13)
rc = cuda.cuInit(0)
count = ctypes.c_int(0)
if rc != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
    print("gpuship-smoke: cuInit failed with CUDA error", rc); sys.exit(14)
print("gpuship-smoke: CUDA sees", count.value, "device(s)")
try:
    import torch
except ImportError:
    sys.exit(0)
if not torch.cuda.is_available():
    print("gpuship-smoke: torch", torch.__version__, "reports no GPU (CPU fallback)"); sys.exit(15)
try:
    value = (torch.ones(1, device="cuda") + 1).item()
except RuntimeError as error:
    print("gpuship-smoke: torch kernel failed:", str(error).splitlines()[0]); sys.exit(16)
print("gpuship-smoke: torch", torch.__version__, "ran a kernel on", torch.cuda.get_device_name(0))
"""

PROBE_SCRIPT = (
    "ls /dev/nvidia[0-9]* >/dev/null 2>&1 || "
    '{ echo "gpuship-smoke: no /dev/nvidia* device in the container"; exit 11; }\n'
    "if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L || "
    '{ echo "gpuship-smoke: nvidia-smi failed"; exit 12; }; fi\n'
    "PY=$(command -v python3 || command -v python || true)\n"
    '[ -z "$PY" ] && { echo "gpuship-smoke: no python in the image; device check only"; exit 0; }\n'
    'exec "$PY" -c "$GPUSHIPPYTHON_PROBE"\n'
)

_SETUP_FIX = (
    "install nvidia-container-toolkit and run 'nvidia-ctk runtime configure --runtime=docker', "
    "then restart Docker; or exclude this runner label for the job"
)


def run_smoke(image: str, environ: Mapping[str, str], gpu_ids: tuple[str, ...] = ()) -> Check:
    """Run the probe in `image` with all (or the selected) GPUs requested like `--gpus`."""
    try:
        engine = Engine.connect(environ, timeout=SMOKE_TIMEOUT_S)
    except DockerUnavailable as error:
        return _fail(str(error), "start Docker")
    with engine:
        return _probe(engine, image.removeprefix("docker://"), GpuRequest(gpu_ids))


def _probe(engine: Engine, image: str, gpus: GpuRequest) -> Check:
    try:
        container = _create_probe(engine, image, gpus)
    except ImageMissing:
        # --smoke runs the image, so it needs it locally: pull like `docker run` would.
        try:
            engine.pull(image)
            container = _create_probe(engine, image, gpus)
        except EngineRefused as error:
            return _fail(f"image {image} cannot be pulled: {error.message}", "check the image")
    except EngineRefused as error:
        return _fail(f"Docker refused the GPU request: {error.message}", _SETUP_FIX)
    try:
        try:
            container.start()
        except EngineRefused as error:
            return _fail(f"the container did not start with GPUs: {error.message}", _SETUP_FIX)
        code = container.wait(timeout=SMOKE_TIMEOUT_S)
        output = container.logs().strip()
    finally:
        container.remove()
    lines = [line for line in output.splitlines() if line.strip()]
    tail = " | ".join(lines[-3:]) or "(no output)"
    if code == 0:
        return Check(rules.SMOKE, Status.OK, "container", f"probe passed: {tail}")
    return _fail(
        f"probe exited {code}: {tail}",
        "read the probe output; a CPU fallback or CUDA error shows here",
    )


def _create_probe(engine: Engine, image: str, gpus: GpuRequest) -> Container:
    return engine.create_container(
        image,
        entrypoint=["/bin/sh", "-c"],
        command=[PROBE_SCRIPT],
        gpus=gpus,
        environment={
            "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
            "GPUSHIPPYTHON_PROBE": PYTHON_PROBE,
        },
    )


def _fail(message: str, fix: str) -> Check:
    return Check(rules.SMOKE, Status.FAIL, "container", message, fix=fix)
