"""Benchmark `redact_credentials` on hostile text: time must grow linearly with its size.

Every rendering of a report passes through it (up to `json-max-bytes`, 16 MiB), and a report
quotes text an attacker chooses (image labels, registry error bodies). Shapes are the ones
that made the old pattern quadratic (`"a." * n + "@"`: a scheme could start at every dot) and
the worst cases of the userinfo and query-parameter patterns; each is timed at 1, 2, 4, 8 and
16 MiB, best of `--runs`, and the ratio to the 1 MiB time is printed (linear: about 2, 4, 8,
16).

    .venv/bin/python bench/redaction/run.py [--runs 3] [--max-mib 16]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from gpuship.redaction import redact_credentials

SHAPES = {
    "a-dots": ("a.", "@"),
    "scheme-runs": ("a.b", "://u:p@h"),
    "ats": ("a@", "/"),
    "many-urls": ("a://b", "@h"),
    "sigs": ("?sig=", ""),
    "names": ("&sig", "=x"),
    "report-like": ('{"label": "https://u:p@h/x?sig=abc", "n": 1},\n', ""),
}


def _best(text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        redact_credentials(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-mib", type=int, default=16)
    args = parser.parse_args()
    sizes = [1 << k for k in range(args.max_mib.bit_length()) if 1 << k <= args.max_mib]
    print("| shape | " + " | ".join(f"{m} MiB" for m in sizes) + f" | time ratio {sizes[-1]}x:1x |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for name, (piece, tail) in SHAPES.items():
        cells = []
        for mib in sizes:
            text = piece * ((mib << 20) // len(piece)) + tail
            cells.append(_best(text, args.runs))
        ratio = cells[-1] / cells[0] if cells[0] else float("nan")
        shown = " | ".join(f"{seconds * 1000:.1f} ms" for seconds in cells)
        print(f"| {name} | {shown} | {ratio:.1f} |")
    _before(args.runs)


# The pattern before the fix, kept here only to show what it cost: a scheme could start at
# every word boundary, and from each the engine scanned the rest of the run again.
_OLD = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)"
    r"(?P<userinfo>[^\s/?#\"<>\\\[\]{}]+)@(?=[A-Za-z0-9\[%])"
)


def _before(runs: int) -> None:
    print('\nthe pattern before the fix, `"a." * n + "@"`:\n')
    print("| n | old pattern | now |")
    print("|---:|---:|---:|")
    for n in (10_000, 20_000, 40_000):
        text = "a." * n + "@"
        old = min(_timed(lambda text=text: _OLD.sub("", text)) for _ in range(runs))
        print(f"| {n:,} | {old * 1000:.0f} ms | {_best(text, runs) * 1000:.2f} ms |")


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
