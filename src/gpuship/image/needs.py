"""Read what an image says and holds about its GPU needs, once, without pulling.

`read_image` reads the config (and with `deep`, the layers) from a registry, the local
engine (`docker://`), a `docker save` archive or an OCI layout, and returns the reading as it
is; `compat.needs.image_needs` interprets it. `read_gpu_needs` does both for `verify`,
`fleet` and, through the command, `route`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from gpuship.compat.needs import ImageGpuNeeds, ImageScan, image_needs
from gpuship.image.inspect import inspect_resolved
from gpuship.image.location import open_source
from gpuship.image.source import Platform
from gpuship.platforms import PlatformMissing
from gpuship.registry.access import RegistryAccess


@dataclass(frozen=True)
class ImageReading:
    """What was read of one image, not yet interpreted: which image it is, its config's env
    and labels, and with a deep read what the scan of its layers found."""

    reference: str
    manifest_digest: str
    platform: str
    env: Mapping[str, str]
    labels: Mapping[str, str]
    scan: ImageScan | None  # None: config only, no layer data was read


def read_image(
    reference: str,
    *,
    platform: str = "linux/amd64",
    access: RegistryAccess | None = None,
    deep: bool | Callable[[Mapping[str, str]], bool] = True,
) -> ImageReading:
    """Read the image's manifest and config once, and its layers as `deep` says: always,
    never (config only, no layer data at all), or when the predicate, given the config's
    labels, says the labels do not suffice."""
    access = access or RegistryAccess()
    with open_source(reference, access=access) as source:
        image = source.resolve(Platform.parse(platform))
        scan = deep(image.config.labels) if callable(deep) else deep
        analysis = inspect_resolved(source, image, limits=access.limits) if scan else None
    if analysis is not None:
        image = analysis.image
    return ImageReading(
        reference=image.reference,
        manifest_digest=image.manifest_digest,
        platform=image.platform,
        env=image.config.env,
        labels=image.config.labels,
        scan=analysis.scan if analysis is not None else None,
    )


def labels_lack_needs(reference: str, labels: Mapping[str, str]) -> bool:
    """Layers are read only when the labels do not state both the CUDA and the arch list, as
    `compat.needs` reads them (an empty label states nothing)."""
    stated = image_needs(reference, {}, labels)
    return stated.cuda is None or stated.arch_targets is None


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
    reading = read_image(
        reference,
        platform=platform,
        access=access,
        deep=partial(labels_lack_needs, reference) if deep else False,
    )
    return image_needs(
        reference, reading.env, reading.labels, reading.scan, platform=reading.platform
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
    try:
        return read_gpu_needs(reference, platform=platform, access=access, deep=deep)
    except PlatformMissing as missing:
        return ImageGpuNeeds(reference, missing_platform=platform, platforms=missing.available)
