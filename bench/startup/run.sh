#!/usr/bin/env bash
# Start-up of every command: `gpuship COMMAND --help` (interpreter, CLI, that command's module)
# and, for commands that run without a network or GPU, a small real invocation; each against
# its budget (budgets.tsv). hyperfine, 10 runs after 2 warm-ups; `python -c pass` is the floor.
# Usage: bench/startup/run.sh   (from anywhere; writes bench/.work/startup/*)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
# shellcheck source=bench/startup/common.sh
. bench/startup/common.sh
one_file >/dev/null # $out/Dockerfile, which budgets.tsv's lint line reads
measure() { # name, command
  hyperfine -N --warmup 2 --runs 10 --export-json "$out/$1.json" --command-name "$1" "$2" \
    >/dev/null 2>&1 || hyperfine --warmup 2 --runs 10 -i --export-json "$out/$1.json" \
    --command-name "$1" "$2" >/dev/null
}
measure "python -c pass" "$venv/python -c pass"
while IFS=$'\t' read -r name _budget command; do
  [ "$name" = "name" ] && continue
  measure "$name" "${command//\$venv/$venv}"
done <bench/startup/budgets.tsv
"$venv/python" - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
floor = json.loads((out / "python -c pass.json").read_text())["results"][0]["mean"]
print(f"python -c pass: {floor * 1000:.0f} ms\n")
print("| invocation | budget (ms) | mean (ms) | ± (ms) | within budget |")
print("|---|---|---|---|---|")
for line in Path("bench/startup/budgets.tsv").read_text().splitlines()[1:]:
    name, budget, _ = line.split("\t")
    result = json.loads((out / f"{name}.json").read_text())["results"][0]
    mean, spread = result["mean"] * 1000, result["stddev"] * 1000
    print(f"| `{name}` | {budget} | {mean:.0f} | {spread:.0f} | {'yes' if mean <= float(budget) else 'NO'} |")
PY

# One Dockerfile beside hadolint and `python -c pass`, in alternating rounds (issue #37).
bash bench/startup/lint.sh
