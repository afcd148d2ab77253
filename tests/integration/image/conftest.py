"""Fixtures for the image integration tests: a real GPU library built by nvcc, once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NVCC = "/usr/local/bin/nvcc"
KERNEL = """
__global__ void scale(float* data, float by) { data[threadIdx.x] *= by; }
extern "C" void run_scale(float* data) { scale<<<1, 32>>>(data, 2.0f); }
"""
# SASS for sm_75, sm_80, sm_90 and PTX for compute_90: what the parser must report.
GENCODES = (
    "arch=compute_75,code=sm_75",
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=[sm_90,compute_90]",
)


@pytest.fixture(scope="session")
def nvcc_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object with a `.nv_fatbin` for GENCODES, compiled by the real nvcc."""
    if not Path(NVCC).exists() and shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    nvcc = NVCC if Path(NVCC).exists() else "nvcc"
    directory = tmp_path_factory.mktemp("nvcc")
    source = directory / "scale.cu"
    source.write_text(KERNEL)
    output = directory / "libscale.so"
    command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(output), str(source)]
    for gencode in GENCODES:
        command += ["-gencode", gencode]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return output
