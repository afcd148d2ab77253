"""`.dockerignore` matching at scale: gpuship lint of a 3,000-file context whose ignore file
holds N patterns, beside the same lint with the pattern-by-pattern matcher gpuship had before
(moby/patternmatcher's loop: each pattern on each path and its parents; --old-src), and
beside hadolint on the same Dockerfile (hadolint reads no .dockerignore: its `--help` has no
such option, so its time is the floor of a Dockerfile-only linter, not a matcher's).

Three pattern mixes, the hostile catalog's: `typical` (names, directories, `**/name`,
`*.ext`, `dir/**/*.ext`, as real ignore files hold), `wildcard` (`**/f<i>?x`: every pattern
alive in every file name) and `leading-wildcard` (`**/*f<i>?x`: the worst found for one RE2
set of all patterns). Each command, hadolint's included, runs RUNS times; CPU is the child's
user+system time (resource.getrusage), reported as median and min..max; ratios are of medians.

Usage: .venv/bin/python bench/dockerignore/run.py [--old-src DIR] [--sizes 1250 2500 5000
10000] [--old-sizes 250 500 1000] [--runs 3]; prints a Markdown table (--old-sizes only
with --old-src: the old matcher takes 26 ms a pattern here).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration" / "hostile")]

from test_catalog import TYPICAL_IGNORE  # noqa: E402

VENV = Path(sys.executable).parent
FILES = 3_000
# The hostile catalog's shapes (its AT_THE_LIMIT cases run each at 10,000 patterns).
MIXES = {
    "typical": TYPICAL_IGNORE,
    "wildcard": (lambda i: f"**/f{i}?x",),
    "leading-wildcard": (lambda i: f"**/*f{i}?x",),
}


def make_context(directory: Path, mix: str, patterns: int) -> Path:
    rng = random.Random(1)  # noqa: S311 (the same context each run, not a secret)
    for _ in range(FILES):
        path = directory / f"src/d{rng.randrange(100)}/s{rng.randrange(20)}"
        path.mkdir(parents=True, exist_ok=True)
        (path / f"f{rng.randrange(20_000)}x{rng.randrange(9)}.py").write_text("x\n")
    shapes = MIXES[mix]
    lines = [shapes[i % len(shapes)](i) for i in range(patterns)]
    (directory / ".dockerignore").write_text("\n".join(lines) + "\n")
    (directory / "Dockerfile").write_text("FROM python:3.12\nCOPY . /app\nRUN pip install .\n")
    return directory


def cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Exit 1 (findings) is a result here, not a failure.
    subprocess.run(
        command, check=False, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(command: list[str], env: dict[str, str], runs: int) -> tuple[float, str]:
    """(median CPU seconds, "median (min..max)")."""
    times = sorted(cpu_seconds(command, env) for _ in range(runs))
    median = statistics.median(times)
    return median, f"{median:.2f} ({times[0]:.2f}..{times[-1]:.2f})"


def ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / max(denominator, 0.005):.0f}x"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old-src", type=Path, help="src/ of the tree before the change")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1250, 2500, 5000, 10000])
    parser.add_argument("--old-sizes", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("GPUSHIP_")}
    new_env = {**base, "PYTHONPATH": str(ROOT / "src")}
    old_env = {**base, "PYTHONPATH": str(args.old_src)} if args.old_src else None
    print("| mix | patterns | gpuship CPU s | old matcher CPU s | old / new | hadolint CPU s |"
          " gpuship / hadolint |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for mix in MIXES:
        for size in sorted({*args.sizes, *(args.old_sizes if old_env else ())}):
            work = Path(tempfile.mkdtemp(prefix=f"dockerignore-{mix}-{size}-"))
            context = make_context(work, mix, size)
            lint = [str(VENV / "gpuship"), "lint", "--fail-on", "never", "--format", "json"]
            lint.append(str(context / "Dockerfile"))
            new, new_cell = measure(lint, new_env, args.runs)
            old_cell = old_ratio = "-"
            if old_env is not None and size in args.old_sizes:
                old, old_cell = measure(lint, old_env, args.runs)
                old_ratio = ratio(old, new)
            hadolint = [str(VENV / "hadolint"), str(context / "Dockerfile")]
            floor, floor_cell = measure(hadolint, base, args.runs)
            cells = [mix, size, new_cell, old_cell, old_ratio, floor_cell, ratio(new, floor)]
            print("| " + " | ".join(map(str, cells)) + " |", flush=True)
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
