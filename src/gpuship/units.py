"""Sizes as people read them in messages and tables."""

from __future__ import annotations


def human_size(size: int) -> str:
    """1536 -> '1.5 KiB': binary units as `du -h` prints them, bytes as a whole number."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable: TiB returns")
