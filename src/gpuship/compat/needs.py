"""What an image needs from a GPU host, read from its config (env and labels) alone.

Pure: the image stage reads the config (and with `--deep` the layers); this module
interprets it. The `io.gpuship.*` labels are the contract the build stage writes
(gpuship.labels), read by `labelled_needs` for every command (`inspect` checks the arch list
they promise); without them the stock `nvidia/cuda` variables (`CUDA_VERSION`,
`NVIDIA_REQUIRE_CUDA`, `NV_CUDA_COMPAT_PACKAGE`) are the fallback, and `--deep` adds the
image stage's scan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from gpuship.cuda.arch import ArchTarget, parse_arch_list
from gpuship.cuda.declared import declared_cuda
from gpuship.cuda.drivers import compat_cuda_from_package
from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version
from gpuship.errors import InputError
from gpuship.labels import LABEL_ARCH_LIST, LABEL_CUDA, LABEL_MIN_DRIVER


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
    return needs_from_env_and_labels(
        reference,
        env_from_list(inner.get("Env"), reference),
        {str(k): str(v) for k, v in labels.items()},
    )


@dataclass(frozen=True)
class LabelledNeeds:
    """What the build stage's `io.gpuship.*` labels state an image needs (None: not stated)."""

    cuda: str | None
    min_driver: str | None
    arch_targets: tuple[ArchTarget, ...] | None


_T = TypeVar("_T")


def labelled_needs(reference: str, labels: Mapping[str, str]) -> LabelledNeeds:
    """The `io.gpuship.*` needs labels, read the one way every command reads them.

    A label that is set but malformed is an InputError naming the image and the label, in
    `inspect` as in `verify`, `fleet` and `route`: it is the image's own statement of what it
    needs (gpuship.labels), and reading past it would judge an image other than the one that
    runs. An empty value states nothing, as when the label is absent.
    """
    return LabelledNeeds(
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


def needs_from_env_and_labels(
    reference: str, env: Mapping[str, str], labels: Mapping[str, str]
) -> ImageGpuNeeds:
    """Interpret labels first (the build stage's statement), then stock nvidia/cuda variables
    (`cuda.declared` decides which CUDA the image declares)."""
    labelled = labelled_needs(reference, labels)
    cuda, cuda_source = declared_cuda(env, labelled.cuda)
    arch_source = None if labelled.arch_targets is None else f"label {LABEL_ARCH_LIST}"
    compat_cuda, compat_source = _compat_cuda(env)
    return ImageGpuNeeds(
        reference=reference,
        env=dict(env),
        labels=dict(labels),
        cuda=cuda,
        cuda_source=cuda_source,
        min_driver=labelled.min_driver,
        arch_targets=labelled.arch_targets,
        arch_source=arch_source,
        compat_cuda=compat_cuda,
        compat_source=compat_source,
    )


def _compat_cuda(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    package = env.get("NV_CUDA_COMPAT_PACKAGE")
    if not package:
        return None, None
    version = compat_cuda_from_package(package)
    if version is None:
        return None, None
    return str(version), "env NV_CUDA_COMPAT_PACKAGE"


def with_scan(
    needs: ImageGpuNeeds,
    *,
    effective_cuda: str | None,
    libraries: Sequence[tuple[str, Sequence[str]]],
    has_cuda_compat: bool,
) -> ImageGpuNeeds:
    """Fill what the labels did not state from the image stage's scan of the layers.

    The scan's effective CUDA (the highest CUDA anything inside needs, e.g. a cu128 torch
    wheel in a 12.4 base) replaces env-derived values but never the build stage's label.
    No GPU code found leaves the arch list unknown rather than "covers nothing".
    """
    scan = "image scan (--deep)"
    labelled_cuda = needs.cuda_source == f"label {LABEL_CUDA}"
    cuda, cuda_source = needs.cuda, needs.cuda_source
    if effective_cuda is not None and not labelled_cuda:
        cuda, cuda_source = effective_cuda, scan
    arch_targets, arch_source = needs.arch_targets, needs.arch_source
    library_targets: tuple[tuple[str, tuple[ArchTarget, ...]], ...] = ()
    if arch_targets is None and libraries:
        library_targets = tuple(
            (path, tuple(parse_arch_list(sorted(names)))) for path, names in libraries
        )
        union = {str(target) for _, targets in library_targets for target in targets}
        arch_targets, arch_source = tuple(parse_arch_list(sorted(union))), scan
    compat_cuda, compat_source = needs.compat_cuda, needs.compat_source
    if compat_cuda is None and has_cuda_compat and cuda is not None:
        # cuda-compat ships the driver of the toolkit it came with; without the package
        # name, the image's own CUDA is the best statement of which one that is.
        compat_cuda, compat_source = cuda, f"{scan}: cuda-compat libraries found"
    return replace(
        needs,
        cuda=cuda,
        cuda_source=cuda_source,
        arch_targets=arch_targets,
        arch_source=arch_source,
        library_targets=library_targets,
        compat_cuda=compat_cuda,
        compat_source=compat_source,
    )
