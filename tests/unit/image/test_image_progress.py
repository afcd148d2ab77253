"""Scan progress lines on stderr."""

from __future__ import annotations

import io

from gpuship.image.layerscan import LayerScan
from gpuship.image.progress import LayerProgress


def _scan(index: int) -> LayerScan:
    return LayerScan(
        index=index,
        digest="sha256:" + "ab" * 32,
        diff_id="sha256:" + "cd" * 32,
        compressed_size=10,
        uncompressed_size=3 << 20,
        compression="gzip",
        entries=(),
        weights=(),
        gpu_binaries=(),
    )


def test_one_line_per_layer_when_not_a_terminal() -> None:
    out = io.StringIO()
    progress = LayerProgress(out)
    progress(_scan(1))
    progress(_scan(0))
    progress.finish()
    assert out.getvalue().splitlines() == [
        "scanned layer 1 sha256:abababababab: 3.0 MiB, 0 entries",
        "scanned layer 0 sha256:abababababab: 3.0 MiB, 0 entries",
    ]
