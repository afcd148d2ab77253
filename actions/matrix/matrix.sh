#!/usr/bin/env bash
# Run `gpuship matrix` from action inputs (environment only; lists split without globbing).
set -uo pipefail

split() { # split "$1" on spaces, commas and newlines into the array named "$2"
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}
is_true() { [ "$1" = "true" ] || [ "$1" = "1" ]; }
join() { # the words of "$1" (spaces, commas, newlines) joined by commas
  local words
  split "$1" words
  local IFS=,
  printf '%s' "${words[*]}"
}

args=(matrix)
images=()
split "$INPUT_IMAGE" images
for image in "${images[@]}"; do args+=(--image "$image"); done
[ -n "$INPUT_CUDA_VERSIONS" ] && args+=(--axis "cuda=$(join "$INPUT_CUDA_VERSIONS")")
[ -n "$INPUT_PYTHON_VERSIONS" ] && args+=(--axis "python=$(join "$INPUT_PYTHON_VERSIONS")")
[ -n "$INPUT_INCLUDE" ] && args+=(--include "$INPUT_INCLUDE")
[ -n "$INPUT_EXCLUDE" ] && args+=(--exclude "$INPUT_EXCLUDE")
is_true "$INPUT_DROP_INVALID" && args+=(--drop-invalid)
[ -n "$INPUT_LOCK" ] && args+=(--lock "$INPUT_LOCK")
global=()
[ -n "$INPUT_CONFIG" ] && global+=(--config "$INPUT_CONFIG")
[ -n "$INPUT_FAIL_ON" ] && global+=(--fail-on "$INPUT_FAIL_ON")

"$GPUSHIP" "${global[@]}" "${args[@]}"
status=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$status" >>"$GITHUB_OUTPUT"
exit "$status"
