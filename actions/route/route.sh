#!/usr/bin/env bash
# Run `gpuship route` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(route --fleet "$INPUT_FLEET")
images=()
split_words "$INPUT_IMAGES" images
args+=("${images[@]}")
[ -n "$INPUT_MATRIX" ] && args+=(--matrix "$INPUT_MATRIX")
[ -n "$INPUT_GPUS" ] && args+=(--gpus "$INPUT_GPUS")
[ -n "$INPUT_MIN_MEMORY_GIB" ] && args+=(--min-memory-gib "$INPUT_MIN_MEMORY_GIB")
[ -n "${INPUT_REMOVE_LABELS:-}" ] && args+=(--remove-labels "$INPUT_REMOVE_LABELS")
[ -n "${INPUT_RUNNER_SCOPE:-}" ] && args+=(--runner-scope "$INPUT_RUNNER_SCOPE")

run_gpuship "${args[@]}"
