"""Hostile and large Dockerfiles (issue 19's cases), timed through our parser, BuildKit's Go
parser (the `dockerfile` wheel, x86_64 only) and `gpuship lint` end to end.

Usage: cases.py OUT_DIR   writes the files, then prints a Markdown table.
Each parser is timed in a fresh process (CPU seconds and max RSS from getrusage) with a
120 s cap, best of three; `gpuship lint` is timed with /usr/bin/time -v, best of three.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

CAP_S = 120
ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GPUSHIP = str(ROOT / ".venv" / "bin" / "gpuship")


def cases() -> dict[str, str]:
    run = "FROM ubuntu:22.04\nRUN echo a \\\n"
    stages = "".join(
        f"FROM ubuntu:22.04 AS s{i}\nRUN echo {i} > /f{i}\nCOPY --from=s{max(i - 1, 0)} /f /f\n"
        for i in range(5000)
    )
    return {
        "10k continuation lines": run + "  && echo b \\\n" * 10_000 + "  && true\n",
        "20k continuation lines": run + "  && echo b \\\n" * 20_000 + "  && true\n",
        "100k continuation lines": run + "  && echo b \\\n" * 100_000 + "  && true\n",
        "5,000 stages": stages,
        "1 MiB heredoc": "FROM a\nRUN <<EOF\n" + ("echo " + "y" * 94 + "\n") * 10_486 + "EOF\n",
        "15 MB heredoc": "FROM a\nRUN <<EOF\n" + ("echo " + "y" * 94 + "\n") * 150_000 + "EOF\n",
        "20 MB Dockerfile": "FROM a\n" + ("RUN echo " + "x" * 90 + "\n") * 210_000,
    }


_PARSE = """
import resource, sys, time
text = open(sys.argv[2], encoding="utf-8").read()
start = time.process_time()
if sys.argv[1] == "gpuship":
    from gpuship.dockerfile import parse
    try:
        parse(text, limit=None)
    except Exception as exc:
        print(type(exc).__name__, file=sys.stderr)
else:
    import dockerfile
    try:
        dockerfile.parse_string(text)
    except Exception as exc:
        print(type(exc).__name__, file=sys.stderr)
cpu = time.process_time() - start
print(cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def parse_time(parser: str, path: Path) -> str:
    best: tuple[float, int] | None = None
    for _ in range(3):
        try:
            done = subprocess.run(
                [PYTHON, "-c", _PARSE, parser, str(path)],
                capture_output=True,
                text=True,
                timeout=CAP_S,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return f"> {CAP_S} s"
        cpu, rss = done.stdout.split()
        if best is None or float(cpu) < best[0]:
            best = (float(cpu), int(rss))
    assert best is not None
    return f"{best[0]:.2f} s, {best[1] // 1024} MiB"


def lint_time(path: Path) -> str:
    best: tuple[float, int, int] | None = None
    for _ in range(3):
        done = subprocess.run(
            [
                "/usr/bin/time",
                "-v",
                GPUSHIP,
                "lint",
                "--fail-on",
                "never",
                "--format",
                "json",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=CAP_S * 2,
            check=False,
        )
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        assert wall and rss, done.stderr
        seconds = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
        if best is None or seconds < best[0]:
            best = (seconds, int(rss.group(1)), done.returncode)
    assert best is not None
    findings = json.loads(done.stdout)["findings"] if done.stdout else []
    refused = [f["message"] for f in findings if f["rule"] == "GSL001"]
    note = f" ({refused[0]})" if refused else ""
    return f"{best[0]:.2f} s, {best[1] // 1024} MiB, exit {best[2]}{note}"


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    print(
        "| case | size | gpuship parser (CPU, RSS) | BuildKit parser, Go (CPU, RSS) "
        "| `gpuship lint` (wall, RSS, exit) |"
    )
    print("|---|---|---|---|---|")
    for name, text in cases().items():
        path = out / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".Dockerfile")
        path.write_text(text, encoding="utf-8")
        size = f"{len(text.encode()) / 1e6:.2f} MB"
        print(
            f"| {name} | {size} | {parse_time('gpuship', path)} | "
            f"{parse_time('buildkit', path)} | {lint_time(path)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
