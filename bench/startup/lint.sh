#!/usr/bin/env bash
# One Dockerfile, as an editor or a pre-commit hook lints it: `gpuship lint FILE` beside
# `hadolint FILE` and a bare `python -c pass` (the interpreter's own start-up, the floor), in
# ROUNDS rounds of hyperfine (-N, 3 warm-ups, 20 runs each, the three commands alternating
# round by round); then one run of each under GNU time -v for the peak RSS.
# Goal (issue #37): gpuship within 60 ms and within 4x hadolint on an idle machine.
# Usage: bench/startup/lint.sh [FILE]   (default: a two-line apt Dockerfile; ROUNDS=3 by
# default; BEFORE=/path/to/other/src also times another tree's gpuship in the same rounds)
# Writes bench/.work/startup/lint-*.json and prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
# shellcheck source=bench/startup/common.sh
. bench/startup/common.sh
file=$(one_file "${1:-}")
# This tree's gpuship (the venv's editable install may point at another checkout).
src="$PWD/src"
names=("python -c pass" "hadolint" "gpuship")
commands=("$venv/python -c pass" "$venv/hadolint --no-fail $file"
  "env PYTHONPATH=$src $venv/python -m gpuship lint --fail-on never $file")
if [ -n "${BEFORE:-}" ]; then
  "$venv/python" -m compileall -q "$BEFORE" >/dev/null
  names+=("gpuship before")
  commands+=("env PYTHONPATH=$BEFORE $venv/python -m gpuship lint --fail-on never $file")
fi
hyperfine_rounds "$out/lint" "$rounds" 3 20
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086 # the command is words
  /usr/bin/time -v ${commands[$i]} >/dev/null 2>"$out/lint-time-$i.txt" || true
done
"$venv/python" - "$out" "$rounds" "${names[@]}" <<'PY'
import json, re, statistics, sys
from pathlib import Path
out, rounds, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
runs = {name: [] for name in names}
for r in range(1, rounds + 1):
    for result in json.loads((out / f"lint-{r}.json").read_text())["results"]:
        runs[result["command"]].append(result)
def rss(i):
    text = (out / f"lint-time-{i}.txt").read_text()
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return int(found.group(1)) // 1024 if found else 0
hadolint = [r["median"] for r in runs["hadolint"]]
print(f"{rounds} rounds of 20 runs; per round: median (mean ± sd); ratio: median over hadolint's")
print("| command | " + " | ".join(f"round {r}" for r in range(1, rounds + 1))
      + " | min (ms) | ratio to hadolint | peak RSS (MiB) |")
print("|---" * (rounds + 4) + "|")
for i, name in enumerate(names):
    cells = [f"{r['median'] * 1000:.0f} ({r['mean'] * 1000:.0f} ± {r['stddev'] * 1000:.0f})"
             for r in runs[name]]
    ratios = [r["median"] / h for r, h in zip(runs[name], hadolint)]
    low = min(min(r["times"]) for r in runs[name]) * 1000
    print(f"| `{name}` | " + " | ".join(cells)
          + f" | {low:.0f} | {min(ratios):.1f}-{max(ratios):.1f}x | {rss(i)} |")
PY
