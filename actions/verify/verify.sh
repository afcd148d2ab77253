#!/usr/bin/env bash
# Run `gpuship verify` from action inputs (environment only; lists split without globbing).
set -uo pipefail

split() { # split "$1" on spaces, commas and newlines into the array named "$2"
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}
is_true() { [ "$1" = "true" ] || [ "$1" = "1" ]; }

args=(verify --platform "$INPUT_PLATFORM")
[ -n "$INPUT_IMAGE" ] && args+=("$INPUT_IMAGE")
is_true "$INPUT_DEEP" && args+=(--deep)
is_true "$INPUT_SMOKE" && args+=(--smoke)
[ -n "$INPUT_GPUS" ] && args+=(--gpus "$INPUT_GPUS")
[ -n "$INPUT_MIN_MEMORY_GIB" ] && args+=(--min-memory-gib "$INPUT_MIN_MEMORY_GIB")
[ -n "$INPUT_AUDIT_FILE" ] && args+=(--audit "$INPUT_AUDIT_FILE")
split "$INPUT_GPU" selected
for gpu in "${selected[@]}"; do args+=(--gpu "$gpu"); done
global=()
[ -n "$INPUT_CONFIG" ] && global+=(--config "$INPUT_CONFIG")
[ -n "$INPUT_FAIL_ON" ] && global+=(--fail-on "$INPUT_FAIL_ON")

"$GPUSHIP" "${global[@]}" "${args[@]}"
status=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$status" >>"$GITHUB_OUTPUT"
exit "$status"
