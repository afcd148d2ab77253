"""The Markdown table of anatomy.sh and batch.sh, from the JSON of their hyperfine rounds.

Usage: table.py OUT PREFIX ROUNDS RUNS LAST NAME...
Cells are each round's median (ms) of NAME, then the median of the rounds; LAST is the last
column: `spread` (max - min of the rounds), or `ratio` (NAMEs come in pairs, gpuship then the
tool beside it: gpuship's median over the other's, on both rows of the pair).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(out: Path, prefix: str, rounds: int, runs: int, last: str, names: list[str]) -> None:
    medians: dict[str, list[float]] = {name: [] for name in names}
    for number in range(1, rounds + 1):
        for result in json.loads((out / f"{prefix}-{number}.json").read_text())["results"]:
            medians[result["command"]].append(result["median"] * 1000)
    title = {"spread": "spread (max-min)", "ratio": "ratio gpuship/other"}[last]
    print(f"{rounds} rounds of {runs} runs; cells: each round's median (ms)")
    print("| command | " + " | ".join(f"round {r}" for r in range(1, rounds + 1)), end="")
    print(f" | median of rounds | {title} |")
    print("|---" * (rounds + 3) + "|")
    for index, name in enumerate(names):
        cells = medians[name]
        if last == "spread":
            tail = f"{max(cells) - min(cells):.0f}"
        else:
            first = index - index % 2
            pair = [statistics.median(medians[n]) for n in names[first : first + 2]]
            tail = f"{pair[0] / pair[1]:.1f}x"
        shown = " | ".join(f"{c:.0f}" for c in cells)
        print(f"| `{name}` | {shown} | {statistics.median(cells):.0f} | {tail} |")


if __name__ == "__main__":
    out, prefix, rounds, runs, last, *names = sys.argv[1:]
    main(Path(out), prefix, int(rounds), int(runs), last, names)
