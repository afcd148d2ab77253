"""Progress of a release's blob copies: an updating line on a terminal, the total in CI."""

from __future__ import annotations

from gpuship.report.progress import Progress


class CopyProgress:
    """Progress of blob copies on stderr: one updating line on a terminal; in CI logs only
    the total, once every blob is copied."""

    def __init__(self) -> None:
        self._done: dict[str, int] = {}
        self._progress = Progress()

    def __call__(self, digest: str, count: int) -> None:
        self._done[digest] = self._done.get(digest, 0) + count
        total = sum(self._done.values())
        self._progress.update(live=f"copying {digest[:19]}: {total / 1e6:.1f} MB copied")

    def finish(self) -> None:
        """End the progress display with one summary line."""
        if self._done:
            total = sum(self._done.values())
            self._progress.line(f"copied {len(self._done)} blobs, {total / 1e6:.1f} MB")
