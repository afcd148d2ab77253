#!/usr/bin/env bash
# Run `gpuship build` from action inputs (environment only; lists split without globbing).
set -uo pipefail

split() { # split "$1" on commas and newlines into the array named "$2"
  IFS=$'\n,' read -r -d '' -a "$2" <<<"$1" || true
}
is_true() { [ "$1" = "true" ] || [ "$1" = "1" ]; }

args=(build --builder "$INPUT_BUILDER")
if [ -n "$INPUT_CELL" ]; then
  args+=(--cell "$INPUT_CELL")
else
  args+=(--image "$INPUT_IMAGE")
  pairs=()
  split "$INPUT_SET" pairs
  for pair in "${pairs[@]}"; do
    pair="${pair#"${pair%%[![:space:]]*}"}"
    [ -n "$pair" ] && args+=(--set "$pair")
  done
fi
is_true "$INPUT_PUSH" || args+=(--no-push)
is_true "$INPUT_IMAGE_CHECKS" || args+=(--no-image-checks)
[ -n "$INPUT_COMMIT" ] && args+=(--commit "$INPUT_COMMIT")
[ -n "$INPUT_NETWORK" ] && args+=(--network "$INPUT_NETWORK")
[ -n "$INPUT_LOCK" ] && args+=(--lock "$INPUT_LOCK")
global=()
[ -n "$INPUT_CONFIG" ] && global+=(--config "$INPUT_CONFIG")
[ -n "$INPUT_FAIL_ON" ] && global+=(--fail-on "$INPUT_FAIL_ON")

"$GPUSHIP" "${global[@]}" "${args[@]}"
status=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$status" >>"$GITHUB_OUTPUT"
exit "$status"
