#!/usr/bin/env bash
# Run `gpuship probe` from action inputs (environment only). The JSON report goes to the
# json-file input; the step outputs and the job summary are written by gpuship's renderers.
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(probe "$INPUT_IMAGE" --format json --output "$INPUT_JSON_FILE")
[ -n "$INPUT_STABLE" ] && args+=(--stable "$INPUT_STABLE")
is_true compare "$INPUT_COMPARE" || args+=(--no-compare)
[ -n "$INPUT_TRIALS" ] && args+=(--trials "$INPUT_TRIALS")
[ -n "$INPUT_URL" ] && args+=(--url "$INPUT_URL")
is_true job "$INPUT_JOB" && args+=(--job)

run_gpuship "${args[@]}"
