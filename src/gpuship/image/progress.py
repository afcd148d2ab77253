"""Progress of a layer scan: an updating line on a terminal, a line per layer in CI."""

from __future__ import annotations

import threading
import time
from typing import TextIO

from gpuship.image.layerscan import LayerScan
from gpuship.report.progress import Progress

_MIB = 1 << 20


class LayerProgress:
    """Called once per scanned layer (from worker threads); `finish()` ends the display."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._progress = Progress(stream=stream)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._layers = 0
        self._bytes = 0

    def __call__(self, scan: LayerScan) -> None:
        with self._lock:
            self._layers += 1
            self._bytes += scan.uncompressed_size
            elapsed = time.monotonic() - self._started
            self._progress.update(
                live=f"scanned {self._layers} layers, {self._bytes / _MIB:.0f} MiB "
                f"in {elapsed:.1f}s",
                step=f"scanned layer {scan.index} {scan.digest[:19]}: "
                f"{scan.uncompressed_size / _MIB:.1f} MiB, {len(scan.entries)} entries",
            )

    def finish(self) -> None:
        """Close the terminal line with the scan rate."""
        with self._lock:
            elapsed = time.monotonic() - self._started
            rate = self._bytes / _MIB / elapsed if elapsed > 0 else 0.0
            self._progress.finish(f" ({rate:.0f} MiB/s)")
