"""GPU probes: one small CUDA library per arch-target mix, and an image holding each.

They answer, on a real GPU, the question `gpuship verify` answers from the image alone:
does this library's GPU code run on this GPU? `python tests/bed/gpu_probe.py build DIR`
builds them here (nvcc needs no GPU); on a GPU machine `tests/bed/record-gpu-readings.sh`
calls `python tests/bed/gpu_probe.py record AUDIT DIR`, which runs each probe beside
`gpuship verify` of its image. The recorded pairs (tests/data/gpu-readings/) check that the
verdict matches what the hardware did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BED = Path(__file__).resolve().parent
if str(BED.parent) not in sys.path:  # run as a script: make `bed` importable
    sys.path.insert(0, str(BED.parent))

from bed.nvcc import build_gpu_library  # noqa: E402
from bed.oci import make_image, write_oci_layout  # noqa: E402

# Returns the CUDA error name of one kernel launch plus a read-back, so a GPU without a usable
# kernel image reports `cudaErrorNoKernelImageForDevice` instead of crashing the probe.
PROBE_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void twice(int* value) { *value *= 2; }
extern "C" const char* gpuship_probe(void) {
    int* value = 0;
    int host = 21;
    cudaError_t error = cudaMalloc(&value, sizeof(int));
    if (error == cudaSuccess) error = cudaMemcpy(value, &host, sizeof(int), cudaMemcpyHostToDevice);
    if (error == cudaSuccess) { twice<<<1, 1>>>(value); error = cudaGetLastError(); }
    if (error == cudaSuccess) error = cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost);
    if (error == cudaSuccess && host != 42) return "wrong-result";
    return cudaGetErrorName(error);
}
"""
LIBRARY = "libgpuprobe.so"
IMAGE_PATH = "usr/local/lib/" + LIBRARY
# The CUDA these libraries are built with (nvcc 13.0 here); the images state it as stock
# nvidia/cuda images do, so the driver check is judged on a real requirement too.
IMAGE_ENV = {"CUDA_VERSION": "13.0.0", "NVIDIA_REQUIRE_CUDA": "cuda>=13.0"}

# name -> -gencode values. Together they cover every way a GPU can or cannot run a kernel:
# exact SASS, arch-specific SASS, SASS for another major only, PTX JIT from an older arch,
# and PTX only for a newer arch than most GPUs (which no driver can JIT down).
VARIANTS: dict[str, tuple[str, ...]] = {
    "sass-sm80": ("arch=compute_80,code=sm_80",),
    "sass-sm86-ptx86": ("arch=compute_86,code=[sm_86,compute_86]",),
    "sass-sm90": ("arch=compute_90,code=sm_90",),
    "sass-sm90a": ("arch=compute_90a,code=sm_90a",),
    "ptx-compute75": ("arch=compute_75,code=compute_75",),
    "sass-sm100-ptx100": ("arch=compute_100,code=[sm_100,compute_100]",),
    "sass-sm120": ("arch=compute_120,code=sm_120",),
}


def build_probes(directory: Path) -> dict[str, Path]:
    """Build every variant under `directory/NAME/`: the library and an OCI layout `image/`."""
    built = {}
    for name, gencodes in VARIANTS.items():
        variant_dir = directory / name
        variant_dir.mkdir(parents=True, exist_ok=True)
        library = build_gpu_library(variant_dir, gencodes, PROBE_SOURCE, LIBRARY)
        image = make_image([{IMAGE_PATH: library.read_bytes()}], env=IMAGE_ENV)
        write_oci_layout(variant_dir / "image", image, tag=name)
        (variant_dir / "gencodes.json").write_text(json.dumps(list(gencodes)) + "\n")
        built[name] = variant_dir
    return built


# Run in a fresh process per library: a CUDA context is per process, and a failed launch must
# not poison the next probe.
_RUN_PROBE = (
    "import ctypes, sys; probe = ctypes.CDLL(sys.argv[1]).gpuship_probe; "
    "probe.restype = ctypes.c_char_p; print(probe().decode())"
)


def run_probe(library: Path) -> str:
    """The CUDA error name one launch of `library`'s kernel gives on this machine's GPU 0."""
    result = subprocess.run(
        [sys.executable, "-c", _RUN_PROBE, str(library)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        return f"probe exited {result.returncode}: {result.stderr.strip()[-300:]}"
    return result.stdout.strip()


def verify_probe_image(image_dir: Path, audit: Path) -> dict[str, object]:
    """`gpuship verify --deep` of one probe image against `audit`, as its JSON report."""
    env = dict(os.environ)
    # Probes run straight on the host, so the container runtime is not part of the question.
    env["GPUSHIP_VERIFY__REQUIRE_GPU_RUNTIME"] = "false"
    command = [sys.executable, "-m", "gpuship", "--format", "json", "verify", f"oci:{image_dir}"]
    result = subprocess.run(
        [*command, "--deep", "--gpus", "1", "--audit", str(audit)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    report: dict[str, object] = json.loads(result.stdout) if result.stdout.strip() else {}
    return {"exit_code": result.returncode, "stderr": result.stderr.strip(), "report": report}


def record_probes(audit: Path, directory: Path) -> dict[str, object]:
    """For every built variant: its gencodes, what the GPU did, and what verify said."""
    recorded: dict[str, object] = {}
    for variant_dir in sorted(path for path in directory.iterdir() if path.is_dir()):
        recorded[variant_dir.name] = {
            "gencodes": json.loads((variant_dir / "gencodes.json").read_text()),
            "gpu_result": run_probe(variant_dir / LIBRARY),
            "verify": verify_probe_image(variant_dir / "image", audit),
        }
    return recorded


def main(argv: list[str]) -> int:
    """`build DIR` here, `record AUDIT DIR` on a GPU machine (JSON to stdout)."""
    if len(argv) == 2 and argv[0] == "build":
        for variant in build_probes(Path(argv[1])):
            print(variant)
        return 0
    if len(argv) == 3 and argv[0] == "record":
        print(json.dumps(record_probes(Path(argv[1]), Path(argv[2])), indent=1))
        return 0
    print("usage: gpu_probe.py build DIR | gpu_probe.py record AUDIT DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
