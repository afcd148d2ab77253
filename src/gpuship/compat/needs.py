"""What an image needs from a GPU host: one model, built once, read by every command.

`image_needs` builds it from what the image states (its config's env and labels) and,
optionally, what the image stage's scan of its layers found (`ImageScan`). Pure: the image
stage reads the image, `compat.cell.cell_needs` gives a matrix cell's labels (nothing built
yet), and `verify`, `fleet`, `route` and `inspect` read the `ImageGpuNeeds` returned.

The `io.gpuship.*` labels come first: they are the contract the build stage writes
(gpuship.labels), read the one way here (a label set but malformed is an input error). Without
them the stock `nvidia/cuda` variables (`CUDA_VERSION`, `NVIDIA_REQUIRE_CUDA`,
`NV_CUDA_COMPAT_PACKAGE`) answer, and a scan fills what the labels leave unsaid. The CUDA the
content needs is the highest any of it needs (cuda-compat.md §5.3: a `cu128` torch wheel in a
`12.4` base image needs a 12.8 driver, and the base's `NVIDIA_REQUIRE_CUDA=cuda>=12.4`
under-states it); a claim weaker than that is an error, as the driver check would pass a host
where the image then fails. Minimum drivers come from the CUDA knowledge base (`gpuship.cuda`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gpuship.cuda.arch import ArchTarget, parse_arch_list
from gpuship.cuda.declared import (
    Claim,
    claimed_cuda,
    claims_enforced,
    cuda_claims,
    declared_cuda,
)
from gpuship.cuda.drivers import compat_cuda_from_package, min_driver_for
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.version import Version
from gpuship.errors import InputError
from gpuship.image_result import CudaEvidence
from gpuship.labels import LABEL_ARCH_LIST, LABEL_CUDA, LABEL_MIN_DRIVER

SCAN = "image scan (--deep)"
ARCH_LABEL = f"label {LABEL_ARCH_LIST}"


@dataclass(frozen=True)
class ImageScan:
    """What the image stage's scan of the layers found that bears on the host: every CUDA
    version something inside needs (`CUDA_VERSION` included), each GPU library with its SASS
    (`sm_XX`) and PTX (`compute_XX`) targets, and whether cuda-compat libraries are there."""

    cuda_evidence: tuple[CudaEvidence, ...]
    libraries: tuple[tuple[str, tuple[str, ...]], ...]
    has_cuda_compat: bool


@dataclass(frozen=True)
class WeakClaim:
    """A claim of the image (env, label) that states less than its content needs."""

    claim: Claim
    message: str


@dataclass(frozen=True)
class ContentCuda:
    """The CUDA the scanned content needs: the highest any of it needs, the evidence that
    decides it, that CUDA's minimum driver, and every claim, with those that state less."""

    effective: str | None
    deciding: CudaEvidence | None
    min_driver: str | None
    unknown: str | None  # why no minimum driver could be given
    claims: tuple[Claim, ...]
    weak_claims: tuple[WeakClaim, ...]


@dataclass(frozen=True)
class ImageGpuNeeds:
    """An image's GPU needs and where each came from (shown in the verdict)."""

    reference: str
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    cuda: str | None = None
    cuda_source: str | None = None
    min_driver: str | None = None
    arch_targets: tuple[ArchTarget, ...] | None = None
    arch_source: str | None = None
    # From a layer scan: each GPU library and its targets. A GPU is served only when every
    # library has a kernel for it, so coverage is judged per library, not on the union.
    library_targets: tuple[tuple[str, tuple[ArchTarget, ...]], ...] = ()
    compat_cuda: str | None = None
    compat_source: str | None = None
    # The platform of the image read (its config's os/architecture), or, when an index had
    # no entry for the platform asked for, that platform and the entries it does have.
    platform: str | None = None
    missing_platform: str | None = None
    platforms: tuple[str, ...] = ()
    content_cuda: ContentCuda | None = None  # None: no layer was scanned

    @property
    def promised_targets(self) -> tuple[ArchTarget, ...]:
        """The GPU targets the `io.gpuship.arch-list` label promises kernels for (none stated:
        none), which `inspect` holds against the scanned libraries."""
        if self.arch_source != ARCH_LABEL or self.arch_targets is None:
            return ()
        return self.arch_targets


def image_needs(
    reference: str,
    env: Mapping[str, str],
    labels: Mapping[str, str],
    scan: ImageScan | None = None,
    *,
    platform: str | None = None,
) -> ImageGpuNeeds:
    """The needs of the image `reference`: its labels first (the build stage's statement),
    then what the scan found, then the stock nvidia/cuda variables (`cuda.declared` decides
    which CUDA they declare). No GPU code found leaves the arch list unknown rather than
    "covers nothing"."""
    labelled = _labelled(reference, labels)
    cuda, cuda_source = declared_cuda(env, labelled.cuda)
    compat_cuda, compat_source = _compat_cuda(env)
    content = None if scan is None else content_cuda(scan.cuda_evidence, env, labels)
    if not labelled.cuda and content is not None and content.effective is not None:
        cuda, cuda_source = content.effective, SCAN
    arch_targets, arch_source, library_targets = _arch(labelled.arch_targets, scan)
    if compat_cuda is None and scan is not None and scan.has_cuda_compat and cuda is not None:
        # cuda-compat ships the driver of the toolkit it came with; without the package
        # name, the image's own CUDA is the best statement of which one that is.
        compat_cuda, compat_source = cuda, f"{SCAN}: cuda-compat libraries found"
    return ImageGpuNeeds(
        reference=reference,
        env=dict(env),
        labels=dict(labels),
        cuda=cuda,
        cuda_source=cuda_source,
        min_driver=labelled.min_driver,
        arch_targets=arch_targets,
        arch_source=arch_source,
        library_targets=library_targets,
        compat_cuda=compat_cuda,
        compat_source=compat_source,
        platform=platform,
        content_cuda=content,
    )


def env_from_list(entries: Any, where: str) -> dict[str, str]:
    """An OCI config `Env` list (`NAME=value`) as a mapping; later entries win, as in Docker."""
    if entries is None:
        return {}
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise InputError(f"{where}: image config Env is not a list of strings")
    env: dict[str, str] = {}
    for entry in entries:
        name, _, value = entry.partition("=")
        env[name] = value
    return env


def needs_from_config(reference: str, config: Mapping[str, Any]) -> ImageGpuNeeds:
    """Needs from an OCI image config (`{"config": {"Env": [...], "Labels": {...}}}`)."""
    inner = config.get("config") or config.get("Config") or {}
    if not isinstance(inner, Mapping):
        raise InputError(f"{reference}: image config has no 'config' object")
    labels = inner.get("Labels") or {}
    if not isinstance(labels, Mapping):
        raise InputError(f"{reference}: image config Labels is not an object")
    return image_needs(
        reference,
        env_from_list(inner.get("Env"), reference),
        {str(k): str(v) for k, v in labels.items()},
    )


@dataclass(frozen=True)
class _Labelled:
    """What the build stage's `io.gpuship.*` labels state an image needs (None: not stated)."""

    cuda: str | None
    min_driver: str | None
    arch_targets: tuple[ArchTarget, ...] | None


_T = TypeVar("_T")


def _labelled(reference: str, labels: Mapping[str, str]) -> _Labelled:
    """The `io.gpuship.*` needs labels, read the one way every command reads them.

    A label that is set but malformed is an InputError naming the image and the label, in
    `inspect` as in `verify`, `fleet` and `route`: it is the image's own statement of what it
    needs (gpuship.labels), and reading past it would judge an image other than the one that
    runs. An empty value states nothing, as when the label is absent.
    """
    return _Labelled(
        cuda=_label(reference, labels, LABEL_CUDA, _version_text("CUDA version")),
        min_driver=_label(reference, labels, LABEL_MIN_DRIVER, _version_text("driver version")),
        arch_targets=_label(reference, labels, LABEL_ARCH_LIST, parse_arch_list),
    )


def _label(
    reference: str, labels: Mapping[str, str], name: str, parse: Callable[[str], _T]
) -> _T | None:
    text = labels.get(name)
    if not text:
        return None
    try:
        return parse(text)
    except InvalidVersion as error:
        raise InputError(f"{reference}: label {name}={text!r}: {error}") from None


def _version_text(what: str) -> Callable[[str], str]:
    """A parser that checks a label holds a version and keeps it as written."""

    def parse(text: str) -> str:
        Version.parse(text, what)
        return text

    return parse


def _arch(
    labelled: tuple[ArchTarget, ...] | None, scan: ImageScan | None
) -> tuple[
    tuple[ArchTarget, ...] | None, str | None, tuple[tuple[str, tuple[ArchTarget, ...]], ...]
]:
    """(arch targets, where they were read, each scanned library's targets): the label's,
    else the union of the scanned libraries' (kept per library too), else unknown."""
    if labelled is not None:
        return labelled, ARCH_LABEL, ()
    if scan is None or not scan.libraries:
        return None, None, ()
    per_library = tuple((path, parse_arch_list(sorted(names))) for path, names in scan.libraries)
    union = {str(target) for _, targets in per_library for target in targets}
    return parse_arch_list(sorted(union)), SCAN, per_library


def _compat_cuda(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    package = env.get("NV_CUDA_COMPAT_PACKAGE")
    if not package:
        return None, None
    version = compat_cuda_from_package(package)
    if version is None:
        return None, None
    return str(version), "env NV_CUDA_COMPAT_PACKAGE"


def _version(text: str) -> Version | None:
    try:
        return Version.parse(text)
    except InvalidVersion:
        return None


def content_cuda(
    evidence: Sequence[CudaEvidence], env: Mapping[str, str], labels: Mapping[str, str]
) -> ContentCuda:
    """The effective CUDA of the scanned content, its minimum driver, and every claim that
    states less."""
    claims = cuda_claims(env, labels)
    ranked = [
        (version.major_minor(), item) for item in evidence if (version := _version(item.version))
    ]
    if not ranked:
        return ContentCuda(None, None, None, None, claims, ())
    effective, deciding = max(ranked, key=lambda pair: pair[0])
    min_driver: Version | None = None
    unknown = None
    try:
        min_driver = min_driver_for(effective)
    except UnknownVersion as error:
        unknown = str(error)
    weak = _weak_claims(claims, env, effective, deciding, min_driver)
    return ContentCuda(
        effective=str(effective),
        deciding=deciding,
        min_driver=str(min_driver) if min_driver is not None else None,
        unknown=unknown,
        claims=claims,
        weak_claims=weak,
    )


def _weak_claims(
    claims: Sequence[Claim],
    env: Mapping[str, str],
    effective: Version,
    deciding: CudaEvidence,
    min_driver: Version | None,
) -> tuple[WeakClaim, ...]:
    """The claims the runtime enforces that state less than the content needs."""
    if not claims_enforced(env):
        return ()
    weak = []
    for claim in claims:
        if claim.source == LABEL_MIN_DRIVER:
            claimed_driver = _version(claim.value.strip())
            if (
                min_driver is not None
                and claimed_driver is not None
                and claimed_driver < min_driver
            ):
                weak.append(
                    WeakClaim(
                        claim,
                        f"{claim.source}={claim.value} but {deciding.source} at "
                        f"{deciding.path} needs CUDA {effective}, i.e. driver >= {min_driver}",
                    )
                )
            continue
        claimed = claimed_cuda(claim)
        if claimed is not None and claimed < effective:
            weak.append(
                WeakClaim(
                    claim,
                    f"{claim.source}={claim.value} claims CUDA {claimed} but {deciding.source} "
                    f"at {deciding.path} needs CUDA {effective}",
                )
            )
    return tuple(weak)
