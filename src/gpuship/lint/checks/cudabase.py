"""The CUDA version and flavour a base image name states (nvidia/cuda, pytorch/pytorch, NGC
framework images, other `-devel` images)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuship.lint.checks.base import image_reference
from gpuship.lint.stages import Stage

_CUDA_TAG = re.compile(r"^(\d+\.\d+)(?:\.\d+)?-(.+)$")
_EMBEDDED_CUDA = re.compile(r"cuda(\d+\.\d+)")
# NGC framework containers ship the full CUDA toolkit (nvcc, headers) they build their framework
# with: "The container also includes ... NVIDIA CUDA" (NVIDIA's PyTorch/TensorFlow/JAX release
# notes, docs.nvidia.com/deeplearning/frameworks/*-release-notes): a devel image by content.
_NGC_FRAMEWORKS = ("nvidia/pytorch", "nvidia/tensorflow", "nvidia/jax", "nvidia/nemo")
# NGC PyTorch images set TORCH_CUDA_ARCH_LIST in their environment (the 23.10 image lists
# `TORCH_CUDA_ARCH_LIST=5.2 6.0 6.1 7.0 7.2 7.5 8.0 8.6 8.7 9.0+PTX` among its variables, as
# quoted in its users' bug reports); the official pytorch/pytorch images set none (their
# Dockerfile, pytorch/pytorch@01343dcd, sets only PATH, NVIDIA_*, LD_LIBRARY_PATH and
# PYTORCH_VERSION), nor do the nvidia/cuda images they are built on.
_SETS_ARCH_LIST = ("nvidia/pytorch", "nvidia/nemo")


@dataclass(frozen=True)
class BaseCuda:
    """What a base image's name says about its CUDA."""

    cuda: str | None  # "12.4"
    flavor: str  # base | runtime | devel | other
    source: str  # "nvidia/cuda" | "pytorch/pytorch" | "ngc" | "other"
    cudnn: bool = False  # a `-cudnn-` / `cudnn9` tag: cuDNN is in the image
    # Whether the image's environment sets TORCH_CUDA_ARCH_LIST; None: unknown to gpuship.
    arch_list: bool | None = None


def base_cuda(stage: Stage) -> BaseCuda | None:
    """The CUDA facts of a stage's external base image, when its name states them."""
    reference = image_reference(stage)
    if reference is None or reference.tag is None:
        return None
    name = reference.name.lower()
    tag = reference.tag.lower()
    tokens = set(re.split(r"[-_.]", tag))
    flavor = next((f for f in ("devel", "runtime", "base") if f in tokens), "other")
    cudnn = any(t.startswith("cudnn") for t in tokens)
    if name.endswith("nvidia/cuda"):
        match = _CUDA_TAG.match(tag)
        return BaseCuda(match.group(1) if match else None, flavor, "nvidia/cuda", cudnn, False)
    if name.endswith("pytorch/pytorch"):
        match = _EMBEDDED_CUDA.search(tag)
        cuda = match.group(1) if match else None
        return BaseCuda(cuda, flavor, "pytorch/pytorch", cudnn, False)
    if reference.registry == "nvcr.io" and name.endswith(_NGC_FRAMEWORKS):
        sets_arch_list = True if name.endswith(_SETS_ARCH_LIST) else None
        return BaseCuda(None, "devel", "ngc", True, sets_arch_list)
    if "cuda" in name or "cuda" in tag or flavor == "devel":
        match = _EMBEDDED_CUDA.search(tag)
        return BaseCuda(match.group(1) if match else None, flavor, "other", cudnn)
    return None
