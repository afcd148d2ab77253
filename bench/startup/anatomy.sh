#!/usr/bin/env bash
# Where a one-file `gpuship lint`'s time goes, layer by layer (bench/startup/anatomy.py), beside
# `python -c pass` and hadolint: ROUNDS rounds of hyperfine (-N, 3 warm-ups, 20 runs each, the
# layers alternating round by round). Issue #37's goal is 60 ms and 4x hadolint; this shows
# which layers that budget has to hold.
# Usage: bench/startup/anatomy.sh [FILE]   (default: lint.sh's two-line apt Dockerfile;
# ROUNDS=3 by default). Writes bench/.work/startup/anatomy-*.json, prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
# shellcheck source=bench/startup/common.sh
. bench/startup/common.sh
file=$(one_file "${1:-}")
export PYTHONPATH="$PWD/src"
py="$venv/python bench/startup/anatomy.py"
$py modules "$file" >"$out/anatomy-modules.json"
names=("python -c pass" "hadolint" "stdlib" "cli" "imports" "free-records" "lazy-regex" "lint")
commands=("$venv/python -c pass" "$venv/hadolint --no-fail $file")
for layer in stdlib cli imports free-records lazy-regex; do
  commands+=("$py $layer $file $out/anatomy-modules.json")
done
commands+=("$py lint $file")
hyperfine_rounds "$out/anatomy" "$rounds" 3 20
"$venv/python" bench/startup/table.py "$out" anatomy "$rounds" 20 spread "${names[@]}"
