"""Each limit's input at half its maximum and at its maximum, through the real command: the
CPU time and peak memory of each (GNU time, as the hostile catalog measures them), so that
the time at the limit can be read against the time at half (linear: about twice).

The inputs are the hostile catalog's (tests/integration/hostile/test_catalog.py,
AT_THE_LIMIT); each is run RUNS times, reported as median and min..max of CPU seconds.
Usage: .venv/bin/python bench/limits/run.py [--runs 3] [NAME ...]; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [
    str(ROOT / "src"),
    str(ROOT / "tests"),
    str(ROOT / "tests" / "integration" / "hostile"),
]
# The children (run_gpuship keeps this environment) run this tree's gpuship, not the venv's.
os.environ["PYTHONPATH"] = str(ROOT / "src")

from test_catalog import AT_THE_LIMIT, run_gpuship  # noqa: E402

from gpuship.limits import DEFAULT_LIMITS  # noqa: E402


def measure(name: str, fraction: float, runs: int) -> tuple[list[float], int]:
    cpu, rss = [], 0
    for _ in range(runs):
        work = Path(tempfile.mkdtemp(prefix="limit-"))
        case = AT_THE_LIMIT[name](fraction)
        outcome = run_gpuship(case.make(work), work)
        cpu.append(outcome.cpu)
        rss = max(rss, outcome.max_rss)
        shutil.rmtree(work, ignore_errors=True)
    return sorted(cpu), rss


def maximum(name: str) -> int:
    """The default of the limit a case is named after ("run-max-commands (pip)")."""
    return int(getattr(DEFAULT_LIMITS, name.split(maxsplit=1)[0].replace("-", "_")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("names", nargs="*", default=sorted(AT_THE_LIMIT))
    args = parser.parse_args()
    print("| limit (input) | maximum | CPU s at half | CPU s at max | max / half"
          " | peak MiB at max |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name in args.names:
        half, _ = measure(name, 0.5, args.runs)
        full, rss = measure(name, 1.0, args.runs)
        ratio = statistics.median(full) / max(statistics.median(half), 0.01)
        cells = [f"{statistics.median(t):.2f} ({t[0]:.2f}..{t[-1]:.2f})" for t in (half, full)]
        row = [name, f"{maximum(name):,}", *cells, f"{ratio:.1f}", str(rss >> 20)]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
