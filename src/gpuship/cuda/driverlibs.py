"""The NVIDIA driver's user-space libraries: the packages and installers that put them into an
image, and the files they are, told apart from the files that only look like them.

A GPU container gets these libraries from the host: the NVIDIA Container Toolkit injects the
host driver's copies into every container started with GPUs ("Do not install the drivers in the
Dockerfile, otherwise the image will not be portable, it will be tied to the exact driver
version you used", NVIDIA/nvidia-docker#528; "nvidia-smi shouldn't be in the container image",
NVIDIA/nvidia-docker#825). An image that carries its own copies holds two drivers' libraries on
any other host, and `libcuda.so.1` may resolve to the image's (NVIDIA/nvidia-docker#1488):
"Failed to initialize NVML: Driver/library version mismatch" (k4yt3x/video2x#1226, a 565 image
on a 535 host), or the toolkit cannot mount over them ("mount error: file creation failed:
.../libnvidia-ml.so.1: file exists", NVIDIA/nvidia-container-toolkit#176).

Every name below is checked against the package's real file list or dependencies (sources
beside each); a package that is not listed is not judged, whatever its name contains:
nvidia-container-toolkit and libnvidia-container* (the toolkit itself), Debian/Ubuntu's
nvidia-cuda-toolkit (nvcc: see below), the CUDA wheels on PyPI.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

# What each group of packages brings, as the messages say it.
_COMPUTE = "libcuda.so, libnvidia-ml.so, libnvidia-ptxjitcompiler.so"
_GRAPHICS = "libGLX_nvidia.so, libnvidia-glcore.so, libnvidia-eglcore.so"
_SMI = "nvidia-smi, " + _COMPUTE


@dataclass(frozen=True)
class DriverPackage:
    """OS packages (apt, dnf/yum) that install driver libraries, and which ones."""

    pattern: re.Pattern[str]
    brings: str


# Branch-suffixed Ubuntu names (`-550`, `-550-server`, `-550-open`), and from branch 590 the
# same names without the branch ("Ubuntu 590 and later packages", NVIDIA Driver Installation
# Guide, docs.nvidia.com/datacenter/tesla/driver-installation-guide: libnvidia-compute-580 ->
# libnvidia-compute, libnvidia-gl-580 -> libnvidia-gl; cuda-drivers kept).
_BRANCH = r"(?:-\d{3}(?:-server)?)?"
_DRIVER_BRANCH = r"(?:-\d{3}(?:-server)?(?:-open)?)?"  # the metapackages also have `-open`

PACKAGES: tuple[DriverPackage, ...] = (
    # Ubuntu: file list of libnvidia-compute-550-server (packages.ubuntu.com/noble/all/
    # libnvidia-compute-550-server/filelist): libcuda.so.550.54.15, libnvidia-ml.so.550.54.15,
    # libnvidia-ptxjitcompiler.so.550.54.15, libnvidia-nvvm, libnvidia-opencl, libcudadebugger.
    DriverPackage(re.compile(rf"^libnvidia-compute{_BRANCH}$"), _COMPUTE),
    # Ubuntu: file list of libnvidia-gl-535-server (packages.ubuntu.com/noble/all/
    # libnvidia-gl-535-server/filelist): libGLX_nvidia.so.535.161.08, libnvidia-glcore.so...
    DriverPackage(re.compile(rf"^libnvidia-gl{_BRANCH}$"), _GRAPHICS),
    # Ubuntu metapackages that depend on libnvidia-compute-<branch>: nvidia-driver-550
    # (packages.ubuntu.com/noble/nvidia-driver-550), nvidia-headless[-no-dkms]-550
    # (packages.ubuntu.com/mantic/nvidia-headless-no-dkms-550), nvidia-utils-550 (nvidia-smi;
    # packages.ubuntu.com/noble/arm64/nvidia-utils-550), nvidia-compute-utils-550
    # (packages.ubuntu.com/noble/nvidia-compute-utils-550). Debian's `nvidia-driver` depends
    # on nvidia-driver-libs (apt-cache show, bookworm non-free 535.309.01-0+deb12u1), and
    # NVIDIA's RHEL `nvidia-driver` requires nvidia-driver-libs (NVIDIA/yum-packaging-nvidia-
    # driver nvidia-driver.spec @015ac1c6).
    DriverPackage(re.compile(rf"^nvidia-driver{_DRIVER_BRANCH}$"), _COMPUTE),
    DriverPackage(
        re.compile(r"^nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?(?:-open)?$"), _COMPUTE
    ),
    DriverPackage(re.compile(r"^nvidia-(?:compute-)?utils-\d{3}(?:-server)?$"), _SMI),
    # NVIDIA's repositories: the metapackage of every driver package (driver installation guide,
    # above), also per branch (`cuda-drivers-550`).
    DriverPackage(re.compile(r"^cuda-drivers(?:-\d{3})?$"), _COMPUTE),
    # Debian non-free (apt-cache show, bookworm 535.309.01-0+deb12u1; file lists on
    # packages.debian.org): libcuda1 ships nvidia/current/libcuda.so.<version>, libnvidia-ml1
    # libnvidia-ml.so.<version>, libnvidia-ptxjitcompiler1 its library; nvidia-smi depends on
    # libnvidia-ml1, nvidia-opencl-icd and libnvidia-tesla-cuda1 on libcuda1, nvidia-tesla-driver
    # on nvidia-driver.
    DriverPackage(re.compile(r"^libcuda1$"), "libcuda.so"),
    DriverPackage(re.compile(r"^libnvidia-tesla-cuda1$"), "libcuda.so"),
    DriverPackage(re.compile(r"^nvidia-opencl-icd$"), "libnvidia-opencl.so, libcuda.so"),
    DriverPackage(re.compile(r"^libnvidia-ml1$"), "libnvidia-ml.so"),
    DriverPackage(re.compile(r"^nvidia-smi$"), "nvidia-smi, libnvidia-ml.so"),
    DriverPackage(re.compile(r"^libnvidia-ptxjitcompiler1$"), "libnvidia-ptxjitcompiler.so"),
    DriverPackage(re.compile(r"^nvidia-tesla-driver$"), _COMPUTE),
    # Debian: nvidia-driver-libs depends on libgl1-nvidia-glvnd-glx and nvidia-egl-icd;
    # libglx-nvidia0, libnvidia-glcore, libnvidia-eglcore ship libGLX_nvidia.so.<version>,
    # libnvidia-glcore.so.<version>, libnvidia-eglcore.so.<version>. NVIDIA's RHEL
    # nvidia-driver-libs ships the same GL/EGL libraries (spec above, `%files libs`).
    DriverPackage(re.compile(r"^nvidia-driver-libs$"), _GRAPHICS),
    DriverPackage(
        re.compile(r"^(?:libglx-nvidia0|libnvidia-glcore|libnvidia-eglcore)$"), _GRAPHICS
    ),
    # NVIDIA's RHEL/Rocky/Fedora packages (spec above): nvidia-driver-cuda-libs ships
    # libcuda.so.<version> and libnvidia-ptxjitcompiler; nvidia-driver-NVML libnvidia-ml.so;
    # nvidia-driver-cuda (nvidia-smi), -devel and -NvFBCOpenGL require nvidia-driver-cuda-libs.
    # The `nvidia-driver` dnf module (`dnf module install nvidia-driver:550-dkms`) is these.
    DriverPackage(
        re.compile(r"^nvidia-driver-cuda-libs$"), "libcuda.so, libnvidia-ptxjitcompiler.so"
    ),
    DriverPackage(re.compile(r"^nvidia-driver-nvml$"), "libnvidia-ml.so"),
    DriverPackage(re.compile(r"^nvidia-driver-(?:cuda|devel|nvfbcopengl)$"), _COMPUTE),
)

# Packages deliberately not judged, and why (the rule's docs say so too):
# - nvidia-cuda-toolkit (Debian/Ubuntu's nvcc) ships no driver library, but its nvidia-cuda-dev
#   depends on `libcuda1 | libnvidia-tesla-cuda1 | libcuda.so.1 | libcuda-11.8-1` (Debian 12;
#   Ubuntu's libnvidia-ml-dev on `libnvidia-compute-580 | ...`): apt takes the first
#   alternative unless another is installed (`apt-get install -s` on Debian 12 installs
#   libcuda1 535.309.01), so what it brings depends on the image; `inspect` sees the result.
# - conda: "CUDA drivers cannot be installed with conda" (conda-forge/cuda-feedstock
#   recipe/doc/end_user_run_guide.md); its `cuda-compat` is forward compatibility, installed
#   into $PREFIX/cuda-compat (conda-forge/cuda-compat-feedstock recipe/build.sh).
# - pip: no wheel ships a driver library: nvidia-ml-py 13.615.71 is pynvml.py only,
#   nvidia-cuda-runtime-cu12 12.9.79 is libcudart.so.12 only (their wheels' file lists).

# NVIDIA's driver installer, `NVIDIA-Linux-x86_64-550.54.15.run` (download.nvidia.com/XFree86/
# Linux-x86_64/<version>/README/installedcomponents.html lists the libraries it installs; with
# `--no-kernel-module` it installs them alone). These options only print or unpack.
DRIVER_INSTALLER = re.compile(r"^NVIDIA-Linux-[A-Za-z0-9_]+-[^/]*\.run$")
INSTALLER_NO_INSTALL = frozenset(
    {"-x", "--extract-only", "--info", "--list", "--check", "-h", "--help", "-A",
     "--advanced-options", "--version", "--uninstall"}
)  # fmt: skip
# The CUDA toolkit's runfile (`cuda_12.4.0_550.54.14_linux.run`) installs the driver with
# `--driver` ("Install the CUDA Driver", CUDA Installation Guide for Linux, runfile options).
CUDA_RUNFILE = re.compile(r"^cuda_[^/]*_linux[^/]*\.run$")
CUDA_RUNFILE_DRIVER = "--driver"

# The libraries the NVIDIA Container Toolkit injects from the host, by the name it looks them
# up under (NVIDIA/libnvidia-container src/nvc_info.c @00b4b47e: utility_libs, compute_libs,
# video_libs, graphics_libs, graphics_libs_glvnd, ngx_libs). It selects a file only when its
# name ends with the driver's version (`select_libraries`: str_has_suffix(lib, nvrm_version)),
# which is how the driver names its real files: libcuda.so.550.54.15, libnvidia-ml.so.418.56.
DRIVER_LIBRARIES = frozenset(
    {
        "libnvidia-ml", "libnvidia-cfg", "libnvidia-nscq",
        "libcuda", "libcudadebugger", "libnvidia-opencl", "libnvidia-gpucomp",
        "libnvidia-ptxjitcompiler", "libnvidia-fatbinaryloader", "libnvidia-allocator",
        "libnvidia-compiler", "libnvidia-pkcs11", "libnvidia-pkcs11-openssl3",
        "libnvidia-nvvm", "libnvidia-tileiras",
        "libvdpau_nvidia", "libnvidia-encode", "libnvidia-opticalflow", "libnvcuvid",
        "libnvidia-eglcore", "libnvidia-glcore", "libnvidia-tls", "libnvidia-glsi",
        "libnvidia-fbc", "libnvidia-ifr", "libnvidia-rtcore", "libnvoptix",
        "libGLX_nvidia", "libEGL_nvidia", "libGLESv2_nvidia", "libGLESv1_CM_nvidia",
        "libnvidia-glvkspirv", "libnvidia-cbl", "libnvidia-ngx",
    }
)  # fmt: skip
# `<library>.so.<driver version>`: a branch of three digits, then one or two parts.
_VERSIONED = re.compile(r"^(?P<library>lib[\w+-]+?)\.so\.(?P<version>\d{3}\.\d+(?:\.\d+)?)$")
# Where files of those names are not the host driver's stand-ins:
# - `stubs/`: the toolkit's link-time stubs (/usr/local/cuda/lib64/stubs/libcuda.so,
#   targets/<arch>/lib/stubs/libnvidia-ml.so; conda's cuda-driver-dev $PREFIX/lib/stubs/), a
#   build-time link target that loads nothing at run time;
# - forward compatibility: NVIDIA's cuda-compat-X-Y package under /usr/local/cuda-X.Y/compat/
#   (cuda-compat.md §1.4; NGC images keep them in compat/lib.real/) and conda-forge's
#   cuda-compat under $PREFIX/cuda-compat/, loaded only where the host driver is older.
_NOT_HOST_STAND_INS = re.compile(
    r"(?:^|/)stubs/|^usr/local/cuda(?:-\d+(?:\.\d+)?)?/compat/|(?:^|/)cuda-compat/"
)


@dataclass(frozen=True)
class DriverLibrary:
    """A driver library file: which library, and the driver version its name carries."""

    library: str
    version: str


def driver_package(name: str) -> DriverPackage | None:
    """The entry of an apt or dnf package name (`libnvidia-compute-550`, `nvidia-driver-NVML`)
    that installs driver libraries, else None."""
    lowered = name.lower()
    return next((p for p in PACKAGES if p.pattern.match(lowered)), None)


def driver_library(path: str) -> DriverLibrary | None:
    """What a file of an image is when it is a driver library by name and place (a path
    relative to the image root, as the layer scan gives it); None for other files, for the
    stubs and for the forward-compatibility libraries."""
    match = _VERSIONED.match(posixpath.basename(path))
    if match is None or match.group("library") not in DRIVER_LIBRARIES:
        return None
    if _NOT_HOST_STAND_INS.search(path):
        return None
    return DriverLibrary(match.group("library"), match.group("version"))
