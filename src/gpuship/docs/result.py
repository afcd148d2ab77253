"""The results of `gpuship docs`: the generated pages, or the image map."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PagesResult:
    """Every generated page, and how many differ from what is committed (--check)."""

    pages: tuple[str, ...]
    stale: int


@dataclass(frozen=True)
class ImageMapResult:
    """`--image-map`: the Markdown map of images, cells, drivers and locked bases."""

    image_map: str


DocsResult = PagesResult | ImageMapResult
