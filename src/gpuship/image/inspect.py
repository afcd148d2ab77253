"""Read an image from any source, scan its layers once, and analyse it."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from gpuship.errors import InputError
from gpuship.image.analysis import ImageAnalysis, analyze
from gpuship.image.layerscan import EntryBudget, LayerError, LayerScan, scan_layer
from gpuship.image.location import open_source
from gpuship.image.source import BlobRef, ImageSource, Platform, ResolvedImage
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.registry.access import RegistryAccess


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

        def scanner(index: int, blob: BlobRef, raw: BinaryIO) -> LayerScan:
            scan = scan_layer(
                raw,
                index=index,
                digest=blob.digest,
                size=blob.size,
                tmpdir=Path(scratch),
                scan_elf=scan_gpu_code,
                verify_digest=not source.verifies_blobs,
                limits=limits,
                budget=budget,
            )
            if progress is not None:
                progress(scan)
            return scan

        try:
            image, scans = source.scan_layers(image, scanner, workers)
        except LayerError as error:
            raise InputError(str(error)) from None
    check_diff_ids(image, scans)
    return analyze(image, scans)
