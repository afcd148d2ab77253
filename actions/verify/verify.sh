#!/usr/bin/env bash
# Run `gpuship verify` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(verify --platform "$INPUT_PLATFORM")
[ -n "$INPUT_IMAGE" ] && args+=("$INPUT_IMAGE")
is_true deep "$INPUT_DEEP" && args+=(--deep)
is_true smoke "$INPUT_SMOKE" && args+=(--smoke)
is_true running "$INPUT_RUNNING" && args+=(--running)
[ -n "$INPUT_GPUS" ] && args+=(--gpus "$INPUT_GPUS")
[ -n "$INPUT_MIN_MEMORY_GIB" ] && args+=(--min-memory-gib "$INPUT_MIN_MEMORY_GIB")
[ -n "$INPUT_AUDIT_FILE" ] && args+=(--audit "$INPUT_AUDIT_FILE")
selected=()
split_words "$INPUT_GPU" selected
for gpu in "${selected[@]}"; do args+=(--gpu "$gpu"); done

run_gpuship "${args[@]}"
