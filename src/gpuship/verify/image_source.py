"""Read an image's GPU needs without pulling it, through the image stage's readers.

`gpuship.image.needs.read_image_needs` reads the config (and with `deep`, the layers) from a
registry, the local engine (`docker://`), a `docker save` archive or an OCI layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gpuship.compat.needs import ImageGpuNeeds, needs_from_env_and_labels, with_scan
from gpuship.labels import LABEL_ARCH_LIST, LABEL_CUDA
from gpuship.registry.access import RegistryAccess


def _labels_lack_needs(labels: Mapping[str, str]) -> bool:
    """Layers are read only when the labels do not state both the CUDA and the arch list."""
    return LABEL_CUDA not in labels or LABEL_ARCH_LIST not in labels


def read_gpu_needs(
    reference: str,
    *,
    platform: str,
    access: RegistryAccess,
    deep: bool,
) -> ImageGpuNeeds:
    """Labels and env from the image config; with `deep`, a layer scan fills what labels lack.
    The manifest and config are read once either way.

    `PlatformMissing` when an index has no entry for `platform`.
    """
    from gpuship.image.needs import read_image_needs

    reading = read_image_needs(
        reference,
        platform=platform,
        access=access,
        deep=_labels_lack_needs if deep else False,
    )
    needs = replace(
        needs_from_env_and_labels(reference, reading.env, reading.labels),
        platform=reading.platform,
    )
    if not reading.deep:
        return needs
    return with_scan(
        needs,
        effective_cuda=reading.effective_cuda,
        libraries=[(lib.path, (*lib.sass, *lib.ptx)) for lib in reading.gpu_libraries],
        has_cuda_compat=reading.has_cuda_compat,
    )


def read_host_needs(
    reference: str,
    *,
    platform: str,
    access: RegistryAccess,
    deep: bool,
) -> ImageGpuNeeds:
    """`read_gpu_needs` for the host that will run the image: an index without an entry for
    its platform gives needs naming the platforms it has, which the verdict fails on."""
    from gpuship.image.source import PlatformMissing

    try:
        return read_gpu_needs(reference, platform=platform, access=access, deep=deep)
    except PlatformMissing as missing:
        return ImageGpuNeeds(reference, missing_platform=platform, platforms=missing.available)
