"""Real GPU libraries for the tests, compiled by nvcc (CUDA 13.0 on these machines, sm_75+).

The image and verify stages read `.nv_fatbin` sections; only libraries nvcc really built
prove the parser. A test that needs one skips, with the reason, where nvcc is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# Where the CUDA toolkit's nvcc is on the project's machines; PATH is searched otherwise.
NVCC = "/usr/local/bin/nvcc"
KERNEL = """
__global__ void scale(float* data, float by) { data[threadIdx.x] *= by; }
extern "C" void run_scale(float* data) { scale<<<1, 32>>>(data, 2.0f); }
"""


def find_nvcc() -> str | None:
    """The nvcc to build with, or None where the CUDA toolkit is absent."""
    return NVCC if Path(NVCC).exists() else shutil.which("nvcc")


def build_gpu_library(
    directory: Path, gencodes: tuple[str, ...], source: str = KERNEL, name: str = "libscale.so"
) -> Path:
    """`directory/name`: `source` (default: one kernel) compiled for each `-gencode` value."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    source_file = directory / (Path(name).stem + ".cu")
    source_file.write_text(source)
    output = directory / name
    command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(output), str(source_file)]
    for gencode in gencodes:
        command += ["-gencode", gencode]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return output
