"""Which packages and files are the NVIDIA driver's user-space libraries, from their real file
lists and dependencies (sources in gpuship/cuda/driverlibs.py), and which only look like it."""

from __future__ import annotations

import pytest

from gpuship.cuda.driverlibs import DriverLibrary, driver_library, driver_package


@pytest.mark.parametrize(
    "name",
    [
        # Ubuntu: the compute and GL libraries, per branch and (590+) without it.
        "libnvidia-compute-550",
        "libnvidia-compute-550-server",
        "libnvidia-compute",
        "libnvidia-gl-535",
        "libnvidia-gl-580-server",
        # Ubuntu metapackages that depend on libnvidia-compute-<branch>.
        "nvidia-driver-550",
        "nvidia-driver-550-open",
        "nvidia-driver-550-server-open",
        "nvidia-headless-no-dkms-550-server",
        "nvidia-headless-535-open",
        "nvidia-utils-535",
        "nvidia-compute-utils-550",
        # NVIDIA's repositories.
        "cuda-drivers",
        "cuda-drivers-550",
        # Debian non-free.
        "libcuda1",
        "libnvidia-tesla-cuda1",
        "libnvidia-ml1",
        "nvidia-smi",
        "nvidia-opencl-icd",
        "nvidia-driver",
        "nvidia-driver-libs",
        "libglx-nvidia0",
        # NVIDIA's RHEL packages, as dnf spells them.
        "nvidia-driver-cuda-libs",
        "nvidia-driver-NVML",
        "nvidia-driver-cuda",
        "nvidia-driver-devel",
    ],
)
def test_driver_packages(name: str) -> None:
    assert driver_package(name) is not None


@pytest.mark.parametrize(
    "name",
    [
        # The toolkit that injects the libraries, and its library: no driver in them.
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container1",
        "libnvidia-container-tools",
        "nvidia-container-runtime",
        "nvidia-docker2",
        # nvcc and the CUDA libraries: not judged (nvidia-cuda-toolkit's dependency on
        # `libcuda1 | ...` depends on what else the image holds).
        "nvidia-cuda-toolkit",
        "nvidia-cuda-dev",
        "cuda-toolkit-12-4",
        "cuda-libraries-12-4",
        "cuda-cudart-12-4",
        # Forward compatibility is meant to be in the image.
        "cuda-compat-12-4",
        # Names that only start like a driver package.
        "nvidia-driver-assistant",
        "nvidia-driver-pinning-580",
        "nvidia-utils-extra",
        "libnvidia-compute-dev",
        # PyPI wheels: no driver library in any (nvidia-ml-py is pynvml.py only).
        "nvidia-cuda-runtime-cu12",
        "nvidia-cudnn-cu12",
        "nvidia-ml-py",
    ],
)
def test_packages_that_carry_no_driver(name: str) -> None:
    assert driver_package(name) is None


@pytest.mark.parametrize(
    ("path", "library", "version"),
    [
        # Ubuntu's libnvidia-compute-550 file list, Debian's nvidia/current, RHEL's lib64.
        ("usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "libcuda", "550.54.15"),
        (
            "usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.535.161.08",
            "libnvidia-ml",
            "535.161.08",
        ),
        ("usr/lib64/libnvidia-ptxjitcompiler.so.418.56", "libnvidia-ptxjitcompiler", "418.56"),
        ("usr/lib/aarch64-linux-gnu/libGLX_nvidia.so.535.171.04", "libGLX_nvidia", "535.171.04"),
        (
            "usr/lib/libnvidia-pkcs11-openssl3.so.550.54.15",
            "libnvidia-pkcs11-openssl3",
            "550.54.15",
        ),
        ("opt/nvidia/libcudadebugger.so.550.54.15", "libcudadebugger", "550.54.15"),
    ],
)
def test_driver_library_files(path: str, library: str, version: str) -> None:
    assert driver_library(path) == DriverLibrary(library, version)


@pytest.mark.parametrize(
    "path",
    [
        # The link-time stubs of the toolkit and of conda's cuda-driver-dev.
        "usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so",
        "usr/local/cuda/lib64/stubs/libnvidia-ml.so",
        "opt/conda/lib/stubs/libcuda.so",
        # Forward compatibility: NVIDIA's cuda-compat, NGC's lib.real, conda-forge's.
        "usr/local/cuda-12.4/compat/libcuda.so.550.54.15",
        "usr/local/cuda-12.4/compat/libnvidia-ptxjitcompiler.so.550.54.15",
        "usr/local/cuda/compat/lib.real/libcuda.so.560.35.03",
        "opt/conda/cuda-compat/libcuda.so.550.54.15",
        "opt/conda/envs/serve/cuda-compat/libnvidia-nvvm.so.550.54.15",
        # Sonames and development names (symbolic links in a real install), Jetson's tegra.
        "usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "usr/lib/x86_64-linux-gnu/libcuda.so",
        "usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1",
        # CUDA toolkit libraries, whose names carry the toolkit's version.
        "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127",
        "usr/lib/python3/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
    ],
)
def test_files_that_are_not_host_driver_libraries(path: str) -> None:
    assert driver_library(path) is None
