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
# shellcheck source=bench/startup/common.sh
. bench/startup/common.sh
mapfile -t all < <(find tests/corpus -name Dockerfile | sort)
names=() commands=()
for n in 1 10 "${#all[@]}"; do
  files="${all[*]:0:$n}"
  names+=("gpuship, $n files" "hadolint, $n files")
  commands+=("env PYTHONPATH=$PWD/src $venv/python -m gpuship lint --fail-on never $files"
    "$venv/hadolint --no-fail $files")
done
hyperfine_rounds "$out/batch" "$rounds" 2 10
"$venv/python" bench/startup/table.py "$out" batch "$rounds" 10 ratio "${names[@]}"
