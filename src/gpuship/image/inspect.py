"""Read an image from any source, scan its layers once, and analyse it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from gpuship.errors import InputError
from gpuship.image.analysis import ImageAnalysis, analyze
from gpuship.image.layerscan import EntryBudget, LayerError, LayerScan, scan_layer
from gpuship.image.location import open_source
from gpuship.image.source import BlobRef, ImageSource, LayerScanner, Platform, ResolvedImage
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.registry.access import RegistryAccess
from gpuship.registry.errors import NotFound


def check_diff_ids(image: ResolvedImage, scans: Sequence[LayerScan]) -> None:
    """Every layer's uncompressed content must hash to the config's `rootfs.diff_ids` entry.

    A layer a limit stopped has no diff_id to compare; it is reported as unchecked instead.
    """
    expected = image.config.rootfs.diff_ids
    if len(expected) != len(scans):
        raise InputError(
            f"{image.reference}: manifest lists {len(scans)} layers but the config's "
            f"rootfs.diff_ids lists {len(expected)}"
        )
    for index, (scan, diff_id) in enumerate(zip(scans, expected, strict=True)):
        if not scan.unchecked and scan.diff_id != diff_id:
            raise InputError(
                f"{image.reference}: layer {index} ({scan.digest}) content hashes to "
                f"{scan.diff_id}, but the config says {diff_id}"
            )


def inspect_image(
    reference: str,
    *,
    platform: str,
    workers: int = 4,
    scan_gpu_code: bool = True,
    access: RegistryAccess | None = None,
    progress: Callable[[LayerScan], None] | None = None,
) -> ImageAnalysis:
    """Scan every layer of `reference` once (in parallel where the source allows) and analyse.

    `progress` is called with each finished layer scan, possibly from worker threads.
    """
    access = access or RegistryAccess()
    with open_source(reference, access=access) as source:
        image = source.resolve(Platform.parse(platform))
        return inspect_resolved(
            source,
            image,
            workers=workers,
            scan_gpu_code=scan_gpu_code,
            progress=progress,
            limits=access.limits,
        )


def _layer_scanner(
    source: ImageSource,
    scratch: Path,
    *,
    scan_gpu_code: bool,
    progress: Callable[[LayerScan], None] | None,
    limits: Limits,
    budget: EntryBudget,
) -> LayerScanner:
    def scanner(index: int, blob: BlobRef, raw: BinaryIO) -> LayerScan:
        scan = scan_layer(
            raw,
            index=index,
            digest=blob.digest,
            size=blob.size,
            tmpdir=scratch,
            scan_elf=scan_gpu_code,
            verify_digest=not source.verifies_blobs,
            limits=limits,
            budget=budget,
        )
        if progress is not None:
            progress(scan)
        return scan

    return scanner


def inspect_resolved(
    source: ImageSource,
    image: ResolvedImage,
    *,
    workers: int = 4,
    scan_gpu_code: bool = True,
    progress: Callable[[LayerScan], None] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ImageAnalysis:
    """`inspect_image` for an image `source` has already resolved."""
    budget = EntryBudget(limits.image_max_entries)
    with tempfile.TemporaryDirectory(prefix="gpuship-inspect-") as scratch:
        scanner = _layer_scanner(
            source,
            Path(scratch),
            scan_gpu_code=scan_gpu_code,
            progress=progress,
            limits=limits,
            budget=budget,
        )
        try:
            image, scans = source.scan_layers(image, scanner, workers)
        except LayerError as error:
            raise InputError(str(error)) from None
    check_diff_ids(image, scans)
    return analyze(image, scans)


@dataclass(frozen=True)
class _Side:
    source: ImageSource
    image: ResolvedImage
    budget: EntryBudget


def inspect_pair(
    candidate: str,
    reference: str,
    *,
    platform: str,
    workers: int = 4,
    scan_gpu_code: bool = True,
    access: RegistryAccess | None = None,
    progress: Callable[[LayerScan], None] | None = None,
) -> tuple[ImageAnalysis, ImageAnalysis]:
    """Analyse two images, reading a layer blob both hold (same digest) once.

    The shared scan counts against the candidate's entry budget only. An image the local
    engine exports whole (`docker://`) cannot share its layers and is read on its own.
    """
    access = access or RegistryAccess()
    limits = access.limits
    wanted = Platform.parse(platform)
    with open_source(candidate, access=access) as new, open_source(reference, access=access) as old:
        sides = [
            _Side(source, source.resolve(wanted), EntryBudget(limits.image_max_entries))
            for source in (new, old)
        ]
        if not all(side.source.opens_blobs for side in sides):
            first, second = (
                inspect_resolved(
                    side.source,
                    side.image,
                    workers=workers,
                    scan_gpu_code=scan_gpu_code,
                    progress=progress,
                    limits=limits,
                )
                for side in sides
            )
            return first, second
        with tempfile.TemporaryDirectory(prefix="gpuship-inspect-") as scratch:
            scans = _scan_shared(sides, Path(scratch), workers, scan_gpu_code, progress, limits)
    analyses = []
    for side, side_scans in zip(sides, scans, strict=True):
        check_diff_ids(side.image, side_scans)
        analyses.append(analyze(side.image, side_scans))
    return analyses[0], analyses[1]


def _scan_shared(
    sides: Sequence[_Side],
    scratch: Path,
    workers: int,
    scan_gpu_code: bool,
    progress: Callable[[LayerScan], None] | None,
    limits: Limits,
) -> list[list[LayerScan]]:
    """Every side's layer scans, each distinct blob read once, `workers` at a time."""
    jobs: dict[object, tuple[_Side, int, BlobRef]] = {}
    keys: list[list[object]] = []
    for number, side in enumerate(sides):
        side_keys: list[object] = []
        for index, blob in enumerate(side.image.layers):
            # A blob without a digest is never taken for another image's.
            key: object = blob.digest or (number, index)
            jobs.setdefault(key, (side, index, blob))
            side_keys.append(key)
        keys.append(side_keys)

    def one(job: tuple[_Side, int, BlobRef]) -> LayerScan:
        side, index, blob = job
        scanner = _layer_scanner(
            side.source,
            scratch,
            scan_gpu_code=scan_gpu_code,
            progress=progress,
            limits=limits,
            budget=side.budget,
        )
        with side.source.open_blob(blob) as raw:
            return scanner(index, blob, raw)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="layer") as pool:
        futures = {key: pool.submit(one, job) for key, job in jobs.items()}
        try:
            done = {key: future.result() for key, future in futures.items()}
        except LayerError as error:
            for future in futures.values():
                future.cancel()
            raise InputError(str(error)) from None
        except BaseException:
            for future in futures.values():
                future.cancel()
            raise
    return [
        [replace(done[key], index=index) for index, key in enumerate(side_keys)]
        for side_keys in keys
    ]


def pushed_sizes(
    references: Sequence[str], *, platform: str, access: RegistryAccess
) -> dict[str, int | None]:
    """Reference -> the compressed bytes its manifest states for `platform` (no layer is
    read); None for a reference the registry does not hold."""
    wanted = Platform.parse(platform)
    sizes: dict[str, int | None] = {}
    for reference in references:
        try:
            with open_source(reference, access=access) as source:
                image = source.resolve(wanted)
        except NotFound:
            sizes[reference] = None
            continue
        sizes[reference] = sum(blob.size or 0 for blob in image.layers)
    return sizes
