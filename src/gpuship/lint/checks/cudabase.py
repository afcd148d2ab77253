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


@dataclass(frozen=True)
class BaseCuda:
    """What a base image's name says about its CUDA."""

    cuda: str | None  # "12.4"
    flavor: str  # base | runtime | devel | other
    source: str  # "nvidia/cuda" | "pytorch/pytorch" | "ngc" | "other"
    cudnn: bool = False  # a `-cudnn-` / `cudnn9` tag: cuDNN is in the image


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
        return BaseCuda(match.group(1) if match else None, flavor, "nvidia/cuda", cudnn)
    if name.endswith("pytorch/pytorch"):
        match = _EMBEDDED_CUDA.search(tag)
        return BaseCuda(match.group(1) if match else None, flavor, "pytorch/pytorch", cudnn)
    if reference.registry == "nvcr.io" and name.endswith(_NGC_FRAMEWORKS):
        return BaseCuda(None, "devel", "ngc", True)
    if "cuda" in name or "cuda" in tag or flavor == "devel":
        match = _EMBEDDED_CUDA.search(tag)
        return BaseCuda(match.group(1) if match else None, flavor, "other", cudnn)
    return None
