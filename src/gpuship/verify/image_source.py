"""Read an image's GPU needs without pulling it, through the image stage's readers.

`gpuship.image.needs.read_image_needs` reads the config (and with `deep`, the layers) from a
registry, the local engine (`docker://`), a `docker save` archive or an OCI layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpuship.labels import LABEL_ARCH_LIST, LABEL_CUDA
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.verify.needs import ImageGpuNeeds, needs_from_env_and_labels, with_scan


def read_gpu_needs(
    reference: str,
    *,
    platform: str,
    insecure_registries: Sequence[str],
    environ: Mapping[str, str],
    deep: bool,
    limits: Limits = DEFAULT_LIMITS,
) -> ImageGpuNeeds:
    """Labels and env from the image config; with `deep`, a layer scan fills what labels lack.

    `PlatformMissing` when an index has no entry for `platform`.
    """
    from gpuship.image.needs import read_image_needs

    reading = read_image_needs(
        reference,
        platform=platform,
        insecure_registries=insecure_registries,
        environ=environ,
        deep=False,
        limits=limits,
    )
    needs = replace(
        needs_from_env_and_labels(reference, reading.env, reading.labels),
        platform=reading.platform,
    )
    labelled = LABEL_CUDA in needs.labels and LABEL_ARCH_LIST in needs.labels
    if not deep or labelled:
        return needs
    scanned = read_image_needs(
        reference,
        platform=platform,
        insecure_registries=insecure_registries,
        environ=environ,
        deep=True,
        limits=limits,
    )
    return with_scan(
        needs,
        effective_cuda=scanned.effective_cuda,
        libraries=[(lib.path, (*lib.sass, *lib.ptx)) for lib in scanned.gpu_libraries],
        has_cuda_compat=scanned.has_cuda_compat,
    )


def read_host_needs(
    reference: str,
    *,
    platform: str,
    insecure_registries: Sequence[str],
    environ: Mapping[str, str],
    deep: bool,
    limits: Limits = DEFAULT_LIMITS,
) -> ImageGpuNeeds:
    """`read_gpu_needs` for the host that will run the image: an index without an entry for
    its platform gives needs naming the platforms it has, which the verdict fails on."""
    from gpuship.image.source import PlatformMissing

    try:
        return read_gpu_needs(
            reference,
            platform=platform,
            insecure_registries=insecure_registries,
            environ=environ,
            deep=deep,
            limits=limits,
        )
    except PlatformMissing as missing:
        return ImageGpuNeeds(reference, missing_platform=platform, platforms=missing.available)
