"""Progress of a layer scan on stderr: an updating line on a terminal, a line per layer in CI."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from gpuship.image.layerscan import LayerScan

_MIB = 1 << 20


class LayerProgress:
    """Called once per scanned layer (from worker threads); `finish()` ends the display."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._layers = 0
        self._bytes = 0

    def __call__(self, scan: LayerScan) -> None:
        with self._lock:
            self._layers += 1
            self._bytes += scan.uncompressed_size
            elapsed = time.monotonic() - self._started
            if self._tty:
                self._stream.write(
                    f"\rscanned {self._layers} layers, {self._bytes / _MIB:.0f} MiB "
                    f"in {elapsed:.1f}s"
                )
            else:
                self._stream.write(
                    f"scanned layer {scan.index} {scan.digest[:19]}: "
                    f"{scan.uncompressed_size / _MIB:.1f} MiB, {len(scan.entries)} entries\n"
                )
            self._stream.flush()

    def finish(self) -> None:
        """Close the terminal line with a summary."""
        with self._lock:
            if self._tty and self._layers:
                elapsed = time.monotonic() - self._started
                rate = self._bytes / _MIB / elapsed if elapsed > 0 else 0.0
                self._stream.write(f" ({rate:.0f} MiB/s)\n")
                self._stream.flush()
