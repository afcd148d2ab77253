"""Per corpus case: what gpuship reports vs what hadolint reports; plus the timing ratio.

Prints Markdown for bench/lint/RESULTS.md. Usage: compare.py HYPERFINE_JSON [HYPERFINE_JSON ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
HADOLINT = ROOT / ".venv" / "bin" / "hadolint"


def hadolint_codes(dockerfile: Path) -> Counter[str]:
    proc = subprocess.run(
        [str(HADOLINT), "--no-fail", "--format", "json", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    return Counter(item["code"] for item in json.loads(proc.stdout or "[]"))


def gpuship_rules(case: Path) -> Counter[str]:
    expected = json.loads((case / "expected.json").read_text())
    return Counter(item["rule"] for item in expected)


def main() -> None:
    for path in sys.argv[1:]:
        timing = json.loads(Path(path).read_text())["results"]
        means = {r["command"]: r["mean"] for r in timing}
        print(f"{Path(path).name}:\n")
        print("| tool | mean (s) | stddev (s) | min (s) | max (s) | user CPU (s) |")
        print("|---|---|---|---|---|---|")
        for r in timing:
            print(
                f"| {r['command']} | {r['mean']:.3f} | {r['stddev']:.3f} | {r['min']:.3f} "
                f"| {r['max']:.3f} | {r['user']:.3f} |"
            )
        users = {r["command"]: r["user"] for r in timing}
        print(
            f"\nhadolint / gpuship = {means['hadolint'] / means['gpuship']:.2f}x wall, "
            f"{users['hadolint'] / users['gpuship']:.2f}x user CPU\n"
        )
    print("| case | gpuship (ex. GSL103 notes) | hadolint |")
    print("|---|---|---|")
    totals: Counter[str] = Counter()
    for case in sorted(p for p in CORPUS.iterdir() if (p / "Dockerfile").is_file()):
        ours = gpuship_rules(case)
        ours.pop("GSL103", None)
        theirs = hadolint_codes(case / "Dockerfile")
        totals["gpuship"] += sum(ours.values())
        totals["hadolint"] += sum(theirs.values())
        fmt = lambda c: ", ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(c.items())) or "-"  # noqa: E731
        print(f"| {case.name} | {fmt(ours)} | {fmt(theirs)} |")
    print(f"\nTotal findings: gpuship {totals['gpuship']}, hadolint {totals['hadolint']}")


if __name__ == "__main__":
    main()
