"""Inspect an image and judge it: the entry point `inspect`, `lint --image` and `build` share."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from gpuship.dockerfile import MAX_DOCKERFILE_BYTES
from gpuship.documents import open_regular
from gpuship.errors import InputError
from gpuship.image.analysis import ImageAnalysis
from gpuship.image.compare import Judged
from gpuship.image.config import ImageStageConfig
from gpuship.image.dockerfile_map import final_stage_instructions, map_layers
from gpuship.image.inspect import inspect_image, inspect_pair
from gpuship.image.progress import LayerProgress
from gpuship.image.report import DockerfileLines, Judgement, judge
from gpuship.image_result import ImageResult
from gpuship.platforms import host_platform
from gpuship.registry.access import RegistryAccess
from gpuship.report import Finding, Rule

# The image stage's checks of one image, for a stage that checks images it does not read
# itself (`lint --image`, `build`): REF and the Dockerfile its findings point into -> the
# findings, their rules and the image result.
ImageCheck = Callable[[str, Path | None], tuple[list[Finding], Mapping[str, Rule], ImageResult]]


def dockerfile_lines(path: Path, analysis: ImageAnalysis) -> DockerfileLines:
    """Which Dockerfile line made each layer of the analysed image."""
    try:
        with open_regular(path, "Dockerfile") as handle:  # a FIFO would block the read
            data = handle.read(MAX_DOCKERFILE_BYTES + 1)
    except OSError as error:
        raise InputError(f"{path}: cannot read Dockerfile: {error}") from None
    if len(data) > MAX_DOCKERFILE_BYTES:
        raise InputError(f"{path}: Dockerfile over the {MAX_DOCKERFILE_BYTES} byte limit")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: cannot read Dockerfile: {error}") from None
    created_by = [layer.created_by for layer in analysis.layers]
    lines = map_layers(created_by, final_stage_instructions(text))
    return DockerfileLines(path=str(path), layer_lines=tuple(lines))


def inspect_and_judge(
    reference: str,
    settings: ImageStageConfig,
    *,
    access: RegistryAccess,
    platform: str | None = None,
    dockerfile: Path | None = None,
    show_progress: bool = False,
) -> Judgement:
    """Read `reference` without pulling it and judge it against the `inspect:` settings."""
    with _layer_progress(show_progress) as progress:
        analysis = inspect_image(
            reference,
            platform=platform or settings.platform or host_platform(),
            workers=settings.workers,
            scan_gpu_code=settings.scan_gpu_code,
            access=access,
            progress=progress,
        )
    mapping = dockerfile_lines(dockerfile, analysis) if dockerfile is not None else None
    return judge(analysis, settings, mapping)


def compare_and_judge(
    candidate: str,
    reference: str,
    settings: ImageStageConfig,
    *,
    access: RegistryAccess,
    platform: str | None = None,
    dockerfile: Path | None = None,
    show_progress: bool = False,
) -> tuple[Judged, Judged]:
    """Read both images without pulling them (a layer they share once) and judge each.

    `dockerfile` built the candidate; the reference's findings point at no file.
    """
    with _layer_progress(show_progress) as progress:
        new, old = inspect_pair(
            candidate,
            reference,
            platform=platform or settings.platform or host_platform(),
            workers=settings.workers,
            scan_gpu_code=settings.scan_gpu_code,
            access=access,
            progress=progress,
        )
    mapping = dockerfile_lines(dockerfile, new) if dockerfile is not None else None
    return (
        Judged(new, judge(new, settings, mapping)),
        Judged(old, judge(old, settings, None)),
    )


def image_check(
    settings: ImageStageConfig, access: RegistryAccess, platform: str | None = None
) -> ImageCheck:
    """`inspect_and_judge` with the `inspect:` settings, as another stage calls it."""

    def check(
        reference: str, dockerfile: Path | None
    ) -> tuple[list[Finding], Mapping[str, Rule], ImageResult]:
        judgement = inspect_and_judge(
            reference, settings, access=access, platform=platform, dockerfile=dockerfile
        )
        return judgement.findings, judgement.rules, judgement.result

    return check


@contextlib.contextmanager
def _layer_progress(show: bool) -> Iterator[LayerProgress | None]:
    """The layer progress line when asked for, finished however the reading ends."""
    progress = LayerProgress() if show else None
    try:
        yield progress
    finally:
        if progress is not None:
            progress.finish()
