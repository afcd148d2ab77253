"""The CUDA version and flavour a base image name states (nvidia/cuda, pytorch/pytorch, NGC
framework images, other `-devel` images)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gpuship.lint.checks.base import image_reference
from gpuship.lint.stages import Stage
from gpuship.reference import Reference

_CUDA_TAG = re.compile(r"^(\d+\.\d+)(?:\.\d+)?-(.+)$")
_EMBEDDED_CUDA = re.compile(r"cuda(\d+\.\d+)")
# NGC framework containers ship the full CUDA toolkit (nvcc, headers) they build their framework
# with: "The container also includes ... NVIDIA CUDA" (NVIDIA's PyTorch/TensorFlow/JAX release
# notes, docs.nvidia.com/deeplearning/frameworks/*-release-notes): a devel image by content.
_NGC_FRAMEWORKS = ("nvidia/pytorch", "nvidia/tensorflow", "nvidia/jax", "nvidia/nemo")
# TORCH_CUDA_ARCH_LIST in a base's environment: the official pytorch/pytorch images set none
# (their Dockerfile, pytorch/pytorch@01343dcd, sets only PATH, NVIDIA_*, LD_LIBRARY_PATH and
# PYTORCH_VERSION), nor do the nvidia/cuda images they are built on. NGC PyTorch images have
# set one (21.12 and 23.10 list `TORCH_CUDA_ARCH_LIST=5.2 6.0 ... 9.0+PTX` among their variables,
# as quoted in their users' reports); whether a given NGC tag does is not known to gpuship.


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
    return _stated(reference)


@functools.lru_cache(maxsize=512)
def _stated(reference: Reference) -> BaseCuda | None:
    # Several rules ask for the base of every RUN, for each target: read each name once.
    assert reference.tag is not None  # base_cuda passes only tagged references
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
        return BaseCuda(None, "devel", "ngc", True, None)
    if "cuda" in name or "cuda" in tag or flavor == "devel":
        match = _EMBEDDED_CUDA.search(tag)
        return BaseCuda(match.group(1) if match else None, flavor, "other", cudnn)
    return None
