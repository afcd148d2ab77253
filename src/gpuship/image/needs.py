"""What an image needs from a GPU host, read once, without pulling.

`read_image_needs` reads the config (and with `deep`, the layers) from a registry, the local
engine (`docker://`), a `docker save` archive or an OCI layout; `read_gpu_needs` turns that
reading into the needs `compat` judges (`verify`, `fleet` and, through the command, `route`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial

from gpuship.compat.needs import (
    ImageGpuNeeds,
    labelled_needs,
    needs_from_env_and_labels,
    with_scan,
)
from gpuship.image.analysis import ScannedLibrary, env_cuda_evidence
from gpuship.image.inspect import inspect_resolved
from gpuship.image.location import open_source
from gpuship.image.requirement import cuda_requirement
from gpuship.image.source import Platform
from gpuship.image_result import CudaEvidence
from gpuship.platforms import PlatformMissing
from gpuship.registry.access import RegistryAccess


@dataclass(frozen=True)
class ImageNeeds:
    """The host requirements an image states and those its content implies."""

    reference: str
    manifest_digest: str
    platform: str
    env: Mapping[str, str]
    labels: Mapping[str, str]
    effective_cuda: str | None
    min_driver: str | None
    cuda_evidence: tuple[CudaEvidence, ...]
    # Per GPU library: a GPU is served only if every library has SASS or PTX for it.
    gpu_libraries: tuple[ScannedLibrary, ...]
    has_cuda_compat: bool
    deep: bool  # False: config only (env/labels); layer content was not read

    @property
    def sass_archs(self) -> frozenset[str]:
        """`sm_XX` targets with SASS in at least one library."""
        return frozenset(arch for library in self.gpu_libraries for arch in library.sass)

    @property
    def ptx_archs(self) -> frozenset[str]:
        """`compute_XX` targets with PTX in at least one library."""
        return frozenset(arch for library in self.gpu_libraries for arch in library.ptx)


def read_image_needs(
    reference: str,
    *,
    platform: str = "linux/amd64",
    access: RegistryAccess | None = None,
    deep: bool | Callable[[Mapping[str, str]], bool] = True,
) -> ImageNeeds:
    """Read the image's needs, its manifest and config once.

    `deep` says whether to read layer content too: always, never (config only, no layer data
    at all), or when the predicate, given the config's labels, says the labels do not suffice.
    """
    access = access or RegistryAccess()
    with open_source(reference, access=access) as source:
        image = source.resolve(Platform.parse(platform))
        scan = deep(image.config.labels) if callable(deep) else deep
        analysis = inspect_resolved(source, image, limits=access.limits) if scan else None
    if analysis is not None:
        image = analysis.image
        evidence = analysis.cuda_evidence
        libraries = analysis.gpu_libraries
        has_cuda_compat = analysis.has_cuda_compat
    else:
        evidence = env_cuda_evidence(image.config.env)
        libraries = ()
        has_cuda_compat = False
    env, labels = image.config.env, image.config.labels
    requirement = cuda_requirement(evidence, env, labels)
    return ImageNeeds(
        reference=image.reference,
        manifest_digest=image.manifest_digest,
        platform=image.platform,
        env=env,
        labels=labels,
        effective_cuda=requirement.effective,
        min_driver=requirement.min_driver,
        cuda_evidence=evidence,
        gpu_libraries=libraries,
        has_cuda_compat=has_cuda_compat,
        deep=analysis is not None,
    )


def labels_lack_needs(reference: str, labels: Mapping[str, str]) -> bool:
    """Layers are read only when the labels do not state both the CUDA and the arch list, as
    `compat.labelled_needs` reads them (an empty label states nothing)."""
    stated = labelled_needs(reference, labels)
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
    reading = read_image_needs(
        reference,
        platform=platform,
        access=access,
        deep=partial(labels_lack_needs, reference) if deep else False,
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
    try:
        return read_gpu_needs(reference, platform=platform, access=access, deep=deep)
    except PlatformMissing as missing:
        return ImageGpuNeeds(reference, missing_platform=platform, platforms=missing.available)
