#!/usr/bin/env bash
# Many Dockerfiles in one call, as pre-commit runs a hook (every staged file matching `files:`
# as arguments of one process; .pre-commit-hooks.yaml): `gpuship lint F1..FN` beside
# `hadolint F1..FN`, for the first 1, 10 and all of the corpus's Dockerfiles, ROUNDS rounds of
# hyperfine (-N, 2 warm-ups, 10 runs each, the commands alternating round by round). Start-up
# is paid once per call: this shows what one more file costs each tool.
# Usage: bench/startup/batch.sh   (ROUNDS=3 by default). Writes bench/.work/startup/batch-*.json
# and prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
# shellcheck source=bench/startup/rounds.sh
. bench/startup/rounds.sh
venv="$PWD/.venv/bin"
out=bench/.work/startup
mkdir -p "$out"
rounds="${ROUNDS:-3}"
mapfile -t all < <(find tests/corpus -name Dockerfile | sort)
names=() commands=()
for n in 1 10 "${#all[@]}"; do
  files="${all[*]:0:$n}"
  names+=("gpuship, $n files" "hadolint, $n files")
  commands+=("env PYTHONPATH=$PWD/src $venv/python -m gpuship lint --fail-on never $files"
    "$venv/hadolint --no-fail $files")
done
hyperfine_rounds "$out/batch" "$rounds" 2 10
"$venv/python" - "$out" "$rounds" "${names[@]}" <<'PY'
import json, statistics, sys
from pathlib import Path
out, rounds, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
runs = {name: [] for name in names}
for r in range(1, rounds + 1):
    for result in json.loads((out / f"batch-{r}.json").read_text())["results"]:
        runs[result["command"]].append(result["median"] * 1000)
print(f"{rounds} rounds of 10 runs; cells: each round's median (ms)")
print("| command | " + " | ".join(f"round {r}" for r in range(1, rounds + 1))
      + " | median of rounds | ratio gpuship/hadolint |")
print("|---" * (rounds + 3) + "|")
for i, name in enumerate(names):
    cells = runs[name]
    pair = runs[names[i - 1 if i % 2 else i + 1]]
    ratio = statistics.median(cells if i % 2 == 0 else pair) / statistics.median(
        pair if i % 2 == 0 else cells)
    print(f"| `{name}` | " + " | ".join(f"{c:.0f}" for c in cells)
          + f" | {statistics.median(cells):.0f} | {ratio:.1f}x |")
PY
