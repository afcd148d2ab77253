"""Print bench/lint-scale's results as Markdown: per shape and size, gpuship's hyperfine
mean ± sd (min..max) and user CPU with limits raised and at defaults, and hadolint's one run.

Usage: python report.py JSON_DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_NAME = re.compile(r"^(?P<shape>.+)-(?P<size>\d+)$")


def _timing(result: dict[str, float]) -> str:
    return (
        f"{result['mean']:.2f} ± {result['stddev'] or 0:.2f} "
        f"({result['min']:.2f}..{result['max']:.2f}), user {result['user']:.2f}"
    )


def _hadolint(path: Path) -> str:
    if not path.exists():
        return ""
    text = path.read_text().split()
    if text == ["killed"] or len(text) < 3:
        return "killed at 120 s"
    wall, user, rss_kb = text[-3:]
    return f"{float(wall):.2f}, user {float(user):.2f}, {int(rss_kb) >> 10} MiB"


def main() -> None:
    directory = Path(sys.argv[1])
    names = {p.stem for p in directory.glob("*.json")} | {
        p.stem for p in directory.glob("*.hadolint")
    }
    rows = []
    for name in names:
        match = _NAME.match(name)
        if match:
            rows.append((match["shape"], int(match["size"]), name))
    print("| shape | size | gpuship, limits raised: s | gpuship, defaults: s | hadolint: s |")
    print("|---|---|---|---|---|")
    for shape, size, name in sorted(rows):
        results = {}
        path = directory / f"{name}.json"
        if path.exists():
            results = {r["command"]: r for r in json.loads(path.read_text())["results"]}
        raised = results.get("gpuship (limits raised)")
        default = results.get("gpuship (default limits)")
        print(
            f"| {shape} | {size} | {_timing(raised) if raised else ''} | "
            f"{_timing(default) if default else ''} | {_hadolint(directory / f'{name}.hadolint')} |"
        )


if __name__ == "__main__":
    main()
