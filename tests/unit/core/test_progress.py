"""The one progress writer: a live line on a terminal, a compact line per step elsewhere."""

from __future__ import annotations

import io
import threading

from gpuship.report.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_in_a_log_each_step_is_a_line_and_live_text_is_left_out() -> None:
    out = io.StringIO()
    progress = Progress(prefix="[cell] ", stream=out)
    assert not progress.terminal
    progress.update(live="copying 1 MB", step=None)
    progress.update(live="scanned 1 layer", step="scanned layer 0: 3.0 MiB")
    progress.line("pushed v1")
    progress.finish(" (9 MiB/s)")
    assert out.getvalue() == "[cell] scanned layer 0: 3.0 MiB\n[cell] pushed v1\n"


def test_on_a_terminal_the_live_line_updates_in_place_and_is_ended_once() -> None:
    out = Terminal()
    progress = Progress(stream=out)
    assert progress.terminal
    progress.update(live="copying 1.0 MB", step="not on a terminal")
    progress.update(live="copying 3.5 MB")
    progress.line("copied 2 blobs")
    progress.update(live="scanned 1 layers")
    progress.finish(" (9 MiB/s)")
    progress.finish(" (never twice)")
    assert out.getvalue() == (
        "\rcopying 1.0 MB\rcopying 3.5 MB\ncopied 2 blobs\n\rscanned 1 layers (9 MiB/s)\n"
    )


def test_nothing_shown_nothing_ended() -> None:
    out = Terminal()
    Progress(stream=out).finish(" (0 MiB/s)")
    assert out.getvalue() == ""


def test_lines_from_threads_are_never_interleaved() -> None:
    out = io.StringIO()
    progress = Progress(stream=out)
    steps = [f"layer {i} " + "x" * 200 for i in range(200)]
    threads = [threading.Thread(target=progress.update, args=("", step)) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(out.getvalue().splitlines()) == sorted(steps)
