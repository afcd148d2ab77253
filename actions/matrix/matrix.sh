#!/usr/bin/env bash
# Run `gpuship matrix` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

join() { # the words of "$1" (spaces, commas, newlines) joined by commas
  local words
  split_words "$1" words
  local IFS=,
  printf '%s' "${words[*]}"
}

args=(matrix)
images=()
split_words "$INPUT_IMAGE" images
for image in "${images[@]}"; do args+=(--image "$image"); done
[ -n "$INPUT_CUDA_VERSIONS" ] && args+=(--axis "cuda=$(join "$INPUT_CUDA_VERSIONS")")
[ -n "$INPUT_PYTHON_VERSIONS" ] && args+=(--axis "python=$(join "$INPUT_PYTHON_VERSIONS")")
[ -n "$INPUT_INCLUDE" ] && args+=(--include "$INPUT_INCLUDE")
[ -n "$INPUT_EXCLUDE" ] && args+=(--exclude "$INPUT_EXCLUDE")
is_true drop-invalid "$INPUT_DROP_INVALID" && args+=(--drop-invalid)
[ -n "$INPUT_LOCK" ] && args+=(--lock "$INPUT_LOCK")

run_gpuship "${args[@]}"
