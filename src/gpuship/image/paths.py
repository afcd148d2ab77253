"""What a path in an image is, judged by where it lies: caches, toolchains, CUDA libraries.

Paths are relative to the image root, without a leading slash (`usr/local/cuda/bin/nvcc`).
"""

from __future__ import annotations

import posixpath
import re

# Package-manager caches that `--no-cache-dir`, `rm -rf /var/lib/apt/lists/*` and friends avoid.
_CACHE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pip", re.compile(r"(^|/)\.cache/pip/")),
    ("uv", re.compile(r"(^|/)\.cache/uv/")),
    ("conda", re.compile(r"(^|/)(?:[^/]*conda[^/]*|mamba[^/]*|micromamba)/pkgs/")),
    ("apt-lists", re.compile(r"^var/lib/apt/lists/(?!lock$|partial/|auxfiles/)[^/]+$")),
    ("apt-archives", re.compile(r"^var/cache/apt/archives/[^/]+\.deb$")),
    ("apt-cache", re.compile(r"^var/cache/apt/[^/]+\.bin$")),
    ("npm", re.compile(r"(^|/)\.npm/_cacache/")),
    ("yarn", re.compile(r"(^|/)\.cache/yarn/")),
)

_CUDA_ROOT = r"usr/local/cuda(?:-\d+(?:\.\d+)?)?/"
_TOOLCHAIN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nvcc", re.compile(r"(^|/)bin/nvcc$")),
    (
        "cuda-compiler",
        re.compile(_CUDA_ROOT + r"(?:nvvm/|bin/(?:ptxas|cicc|fatbinary|nvlink|cudafe\+\+))"),
    ),
    ("cuda-static-lib", re.compile(r"(^|/)lib[^/]*_static(?:_[^/]*)?\.a$")),
    ("cuda-headers", re.compile(_CUDA_ROOT + r"(?:targets/[^/]+/)?include/")),
    ("gcc", re.compile(r"^usr/(?:lib|libexec)/gcc/[^/]+/[^/]+/(?:cc1|cc1plus|lto1)$")),
    ("gcc", re.compile(r"^usr/bin/(?:[a-z0-9_]+-linux-gnu-)?(?:gcc|g\+\+|c\+\+)(?:-\d+)?$")),
)

# Libraries NVIDIA ships both in the toolkit and as `nvidia-*` wheels.
_CUDA_LIB = re.compile(
    r"(?P<name>lib(?:cudart|cublas|cublasLt|cudnn[a-z_]*|cufft|cufftw|curand|cusolver|cusolverMg"
    r"|cusparse|cusparseLt|nccl|nvrtc|nvrtc-builtins|nvJitLink|cupti|nvToolsExt|npp[a-z]*"
    r"|cufile|nvjpeg))\.so(?:\.[0-9.]+)?$"
)
# Debian/Ubuntu system Python installs into dist-packages, everything else into site-packages.
_PACKAGES = r"(?:^|/)(?:site|dist)-packages/"
_WHEEL_LIB_DIR = re.compile(_PACKAGES + r"nvidia/[^/]+/lib/")


def package_cache_of(path: str) -> str | None:
    """Which package cache a file belongs to (`pip`, `apt-lists`...), or None."""
    for name, pattern in _CACHE_PATTERNS:
        if pattern.search(path):
            return name
    return None


def toolchain_of(path: str) -> str | None:
    """Which build toolchain a file belongs to (`nvcc`, `gcc`, `cuda-static-lib`...), or None."""
    for name, pattern in _TOOLCHAIN_PATTERNS:
        if pattern.search(path):
            return name
    return None


def cuda_library(path: str) -> tuple[str, str] | None:
    """(library name, `system` | `wheel`) for a CUDA runtime library file, else None."""
    match = _CUDA_LIB.match(posixpath.basename(path))
    if match is None:
        return None
    where = "wheel" if _WHEEL_LIB_DIR.search(path) else "system"
    return match.group("name"), where


def is_shared_object(path: str) -> bool:
    """`libx.so`, `libx.so.12`, `_C.cpython-311-x86_64-linux-gnu.so`."""
    name = posixpath.basename(path)
    return name.endswith(".so") or ".so." in name


def is_cuda_compat(path: str) -> bool:
    """The forward-compatibility driver libraries of the `cuda-compat` package."""
    return re.search(_CUDA_ROOT + r"compat/libcuda\.so", path) is not None


# --- CUDA version evidence ---------------------------------------------------------------

TORCH_VERSION_FILE = re.compile(_PACKAGES + r"torch/version\.py$")
_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*['\"](\d+\.\d+)", re.MULTILINE)
_CUDART_WHEEL = re.compile(
    _PACKAGES + r"nvidia_cuda_runtime(?:_cu\d+)?-(?P<version>\d+\.\d+)[^/]*\.dist-info/"
)
# Only the real file names the full version (libcudart.so.12.4.127); sonames do not: CUDA 11's
# soname is libcudart.so.11.0 for every 11.x, CUDA 12's is libcudart.so.12.
_CUDART_SONAME = re.compile(r"^libcudart\.so\.(?P<version>\d+\.\d+)\.\d+$")


def torch_cuda_from_version_py(text: str) -> str | None:
    """`cuda = '12.4'` (or `cuda: Optional[str] = '12.4'`) in torch/version.py; None for CPU."""
    match = _TORCH_CUDA.search(text)
    return match.group(1) if match else None


def cuda_runtime_wheel_version(path: str) -> str | None:
    """CUDA major.minor of an `nvidia-cuda-runtime[-cuXX]` wheel from its dist-info path."""
    match = _CUDART_WHEEL.search(path)
    return match.group("version") if match else None


def cudart_soname_version(path: str) -> str | None:
    """CUDA major.minor from a `libcudart.so.12.4.127` file name (sonames tell too little)."""
    match = _CUDART_SONAME.match(posixpath.basename(path))
    return match.group("version") if match else None


# --- Installed packages --------------------------------------------------------------------

DPKG_STATUS = "var/lib/dpkg/status"
# `name-version.dist-info/` (wheels, PEP 376/427) and `name-version[-pyX.Y].egg-info`
# (setuptools); the directory name is escaped so neither part holds a `-`.
_PIP_META = re.compile(
    _PACKAGES + r"(?P<name>[^/-]+)-(?P<version>[^/-]+)(?:-[^/]*)?\.(?:dist|egg)-info(?:/|$)"
)
# conda writes one `conda-meta/<name>-<version>-<build>.json` per installed package.
_CONDA_META = re.compile(r"(?:^|/)conda-meta/(?P<stem>[^/]+)\.json$")
# The full version only the real file carries: libcublas.so.12.4.5.8 (the soname says 12).
_LIBRARY_VERSION = re.compile(r"\.so\.(?P<version>\d+(?:\.\d+)*)$")


def pip_distribution(path: str) -> tuple[str, str, str] | None:
    """(environment, name, version) of a pip distribution's metadata path, else None.

    The environment is the `site-packages` directory, so two virtualenvs stay apart.
    """
    match = _PIP_META.search(path)
    if match is None:
        return None
    return path[: match.start("name")].rstrip("/"), match.group("name"), match.group("version")


def conda_package(path: str) -> tuple[str, str, str] | None:
    """(environment, name, version) of a `conda-meta/*.json` record's path, else None."""
    match = _CONDA_META.search(path)
    if match is None:
        return None
    parts = match.group("stem").rsplit("-", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return path[: match.start()].rstrip("/") or "/", parts[0], parts[1]


def library_file_version(path: str) -> str | None:
    """The version a shared object's file name states (`12.4.5.8`), else None."""
    match = _LIBRARY_VERSION.search(posixpath.basename(path))
    return match.group("version") if match else None
