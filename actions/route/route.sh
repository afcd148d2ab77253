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

run_gpuship "${args[@]}"
