#!/usr/bin/env bash
# bench/probe: the probe's load generator against wrk and hey on the same stand-in server, same run
# (accuracy of its percentiles, and its own ceiling). Three runs; see RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in wrk hey; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/install-test-deps)"; exit 3; }
done
runs="${RUNS:-3}"
for run in $(seq 1 "$runs"); do
  echo "-- run $run of $runs (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  # A session (and so a scheduling autogroup) of its own: compare.py raises its priority.
  setsid --wait .venv/bin/python bench/probe/compare.py --json "${TMPDIR:-/tmp}/bench-probe-$run.jsonl"
done
