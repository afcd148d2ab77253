"""Progress of long work (layer scans, blob copies, builds, probe trials) on stderr, written
the one way DESIGN.md's conventions ask: on a terminal a live line that updates in place; in
CI logs and files a compact line per step, or none where a step is too small to log.

Stages report progress through a callback the command gives them; the command makes it with
`Progress`. Nothing here is part of the Report: stdout keeps only the rendered report.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO


class Progress:
    """Progress lines on `stream` (stderr), each after `prefix`. Safe to call from threads."""

    def __init__(self, prefix: str = "", stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._prefix = prefix
        self.terminal = self._stream.isatty()
        self._live = False  # a live line is shown and not yet ended
        self._lock = threading.Lock()

    def update(self, live: str, step: str | None = None) -> None:
        """One step of the work: on a terminal `live` replaces the live line; elsewhere `step`,
        if given, is logged as a line of its own."""
        with self._lock:
            if self.terminal:
                self._write(f"\r{self._prefix}{live}")
                self._live = True
            elif step is not None:
                self._write(f"{self._prefix}{step}\n")

    def line(self, text: str) -> None:
        """A line of its own everywhere (a build's output, a summary); on a terminal it
        follows the live line, which it ends."""
        with self._lock:
            self._end_live("")
            self._write(f"{self._prefix}{text}\n")

    def finish(self, suffix: str = "") -> None:
        """End the live line, if one is shown, with `suffix` (a rate, a total)."""
        with self._lock:
            self._end_live(suffix)

    def _end_live(self, suffix: str) -> None:
        if self._live:
            self._write(f"{suffix}\n")
            self._live = False

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()
