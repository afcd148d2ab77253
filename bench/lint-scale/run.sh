#!/usr/bin/env bash
# Lint time against Dockerfile size for each shape of stage graph in shapes.py (issue #26),
# gpuship with dockerfile-max-stages raised out of the way (to see the growth itself) and at
# its defaults, then hadolint on the same files. hyperfine, one process per lint.
# targets-max-instructions stays at its default in both: past it, the work of linting each
# target on its own grows with targets x stages (the `tree` shape), which that limit bounds.
# Usage: bench/lint-scale/run.sh   (from anywhere; writes bench/.work/lint-scale/*)
#   SIZES="1000 2000 5000 10000"  stages (ARGs for `args`) per file; RUNs or COPYs for the
#                                 shapes with a context (make-runs, context-copies, ...)
#   ONLY="make-runs context-copies"  those shapes alone (shapes.py names them)
#   RUNS=3                        hyperfine runs per command (plus one warm-up)
#   SRC=/path/to/old/src          lint with another tree's package (a before/after run)
#   HADOLINT_SIZES="200 1000"     sizes hadolint is timed at, "" for none (it is quadratic
#                                 or worse in ARG/ENV count: 1,000 ARGs took it over 10 min
#                                 and 2 GB)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=$PWD/.venv/bin
out=bench/.work/lint-scale
sizes=${SIZES:-1000 2000 5000 10000}
runs=${RUNS:-3}
hadolint_sizes=${HADOLINT_SIZES-200 1000}
rm -rf "$out/files" "$out/json"
mkdir -p "$out/files" "$out/json"
# shellcheck disable=SC2086
ONLY=${ONLY:-} "$venv/python" bench/lint-scale/shapes.py "$out/files" $sizes $hadolint_sizes
pythonpath=${SRC:+$SRC}
raised="env PYTHONPATH=$pythonpath GPUSHIP_LIMITS__DOCKERFILE_MAX_STAGES=1000000"
defaults="env PYTHONPATH=$pythonpath"
for size in $sizes; do
  for dir in "$out"/files/*-"$size"; do
    name=$(basename "$dir")
    hyperfine --warmup 1 --runs "$runs" --ignore-failure --export-json "$out/json/$name.json" \
      --command-name "gpuship (limits raised)" \
      "$raised $venv/gpuship lint --fail-on never --format json $dir/Dockerfile > /dev/null" \
      --command-name "gpuship (default limits)" \
      "$defaults $venv/gpuship lint --fail-on never --format json $dir/Dockerfile > /dev/null"
  done
done
# hadolint once per file, within 120 s (GNU time: wall, user, peak RSS); "killed" past it.
for size in $hadolint_sizes; do
  for dir in "$out"/files/*-"$size"; do
    name=$(basename "$dir")
    if ! /usr/bin/time -o "$out/json/$name.hadolint" -f "%e %U %M" \
        timeout 120 "$venv/hadolint" --no-fail --format json "$dir/Dockerfile" > /dev/null; then
      echo "killed" > "$out/json/$name.hadolint"
    fi
  done
done
"$venv/python" bench/lint-scale/report.py "$out/json"
