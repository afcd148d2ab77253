"""CUDA-bound Python packages other than torch: which CUDA and cuDNN an install needs, which
torch a companion package's binaries are built against, and which Python an OS installs.

Two kinds of facts answer "which CUDA": names that state it, read here (`cupy-cuda12x`,
`nvidia-cublas-cu11`, `tensorrt-cu12`, `jax[cuda12]`, `paddlepaddle-gpu==2.6.1.post120`), and
releases that do not, looked up in the knowledge base (`onnxruntime-gpu`, `tensorflow`). A
release the knowledge base does not hold is unknown: None, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version

if TYPE_CHECKING:
    from gpuship.cuda.knowledge import CudaPackageRow

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).

# "This is a CuPy wheel (precompiled binary) package for CUDA 12.x" (pypi.org/project/
# cupy-cuda12x); cupy-cuda110 "for CUDA 11.0", cupy-cuda102 for 10.2. The `[ctk]` extra installs
# the CUDA components from PyPI (pypi.org/project/cupy-cuda13x): otherwise the system's load.
_CUPY = re.compile(r"^cupy-cuda(\d\d)(x|\d)$")
# NVIDIA's CUDA library wheels: `nvidia-cudnn-cu12`, `nvidia-cuda-runtime-cu11` (CUDA 13's drop
# the suffix and state no CUDA).
_NVIDIA = re.compile(r"^nvidia-([a-z-]+?)-cu(\d\d)$")
# "The dependency names carry the CUDA major version" (TensorRT pip install guide,
# docs.nvidia.com/deeplearning/tensorrt/11.4.0/installing-tensorrt/install-pip.html):
# tensorrt-cu12, tensorrt-cu12-libs, tensorrt-lean-cu12, tensorrt-dispatch-cu12. A bare
# `tensorrt` installs whichever variant that release defaults to: unknown here.
_TENSORRT = re.compile(r"^tensorrt(?:-lean|-dispatch)?-cu(\d\d)(?:-libs|-bindings)?$")
# `jax[cuda12]` (and the older `cuda12_pip`) installs CUDA from pip wheels; `cuda12_local` uses
# the system's (JAX installation guide, docs.jax.dev/en/latest/installation.html).
_JAX_EXTRA = re.compile(r"^cuda(\d\d)(_pip|_local)?$")
# paddlepaddle-gpu 2.x CUDA builds: `2.5.2.post117` is CUDA 11.7, `.post120` CUDA 12.0 (its
# pip install guide, paddlepaddle.org.cn/documentation/docs/en/install/pip/linux-pip_en.html).
_PADDLE_POST = re.compile(r"\.post(\d\d)(\d)$")
# tensorflow's `and-cuda` extra installs the NVIDIA CUDA wheels its release is built with
# (tensorflow.org/install/pip); without it TensorFlow loads the system's CUDA.
_BUNDLING_EXTRA = {"tensorflow": "and-cuda"}


KNOWLEDGE_BASE = "gpuship's knowledge base"  # PackageCuda.known_from for the release rows


@dataclass(frozen=True)
class PackageCuda:
    """The CUDA (and cuDNN) an install of a package needs."""

    cuda: Version  # `12` (any CUDA 12) or `11.8`
    cudnn_major: int | None
    bundled: bool  # its wheels bring that CUDA from pip, rather than loading the system's
    known_from: str  # "its name" or "gpuship's knowledge base"


def package_cuda(name: str, version: str | None, extras: frozenset[str]) -> PackageCuda | None:
    """What installing `name` (`version` when pinned, with `extras`) from PyPI needs; None
    when neither its name nor the knowledge base says."""
    name = name.lower().replace("_", "-")
    named = _named(name, version, extras)
    if named is not None:
        return named
    if version is None:
        return None
    row = _row(name, version)
    if row is None:
        return None
    bundled = _BUNDLING_EXTRA.get(name) in extras
    return PackageCuda(
        Version.parse(row.cuda), row.cudnn_major, bundled, "gpuship's knowledge base"
    )


def _named(name: str, version: str | None, extras: frozenset[str]) -> PackageCuda | None:
    """The CUDA a package's name (or jax's extra, paddle's local build) states."""
    if cupy := _CUPY.match(name):
        cuda = cupy.group(1) if cupy.group(2) == "x" else f"{cupy.group(1)}.{cupy.group(2)}"
        return PackageCuda(Version.parse(cuda), None, "ctk" in extras, "its name")
    if nvidia := _NVIDIA.match(name):
        cudnn = _major(version) if nvidia.group(1) == "cudnn" else None
        return PackageCuda(Version.parse(nvidia.group(2)), cudnn, True, "its name")
    if tensorrt := _TENSORRT.match(name):
        return PackageCuda(Version.parse(tensorrt.group(1)), None, True, "its name")
    if name in ("jax", "jaxlib"):
        for extra in sorted(extras):
            if jax := _JAX_EXTRA.match(extra):
                local = jax.group(2) == "_local"
                return PackageCuda(Version.parse(jax.group(1)), None, not local, "its extra")
    if name == "paddlepaddle-gpu" and version and (paddle := _PADDLE_POST.search(version)):
        cuda = f"{int(paddle.group(1))}.{paddle.group(2)}"
        return PackageCuda(Version.parse(cuda), None, False, "its version")
    return None


def _major(version: str | None) -> int | None:
    if version is None:
        return None
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _row(name: str, version: str) -> CudaPackageRow | None:
    from gpuship.cuda.knowledge import knowledge_base

    try:
        release = Version.parse(version.split("+", 1)[0]).major_minor()
    except InvalidVersion:
        return None
    for row in knowledge_base().cuda_packages:
        if row.package == name and any(Version.parse(r) == release for r in row.releases):
            return row
    return None


def torch_built_for(package: str, version: str) -> Version | None:
    """The torch release whose ABI `package` `version`'s binary wheels are built against
    (xformers 0.0.28.post3 -> torch 2.5.1); None when not recorded."""
    from gpuship.cuda.knowledge import knowledge_base

    name = package.lower().replace("_", "-")
    local = version.split("+", 1)[0]
    for row in knowledge_base().torch_builds:
        if row.package == name and row.version == local:
            return Version.parse(row.torch)
    return None


def os_python(os_name: str, release: str) -> str | None:
    """The Python (major.minor) that `os_name` `release` installs as `python3`."""
    from gpuship.cuda.knowledge import knowledge_base

    for row in knowledge_base().os_pythons:
        if row.os == os_name and row.release == release:
            return row.python
    return None
