#!/usr/bin/env bash
# Run `gpuship lint` from action inputs (environment only). Globs are expanded by bash
# (globstar, no eval), so an input can select files but never run a command.
set -uo pipefail
shopt -s globstar nullglob dotglob
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

patterns=()
split_words "$INPUT_PATHS" patterns
files=()
declare -A seen=()
for pattern in "${patterns[@]}"; do
  for file in $pattern; do
    case "$file" in
      *.dockerignore | .git/* | */.git/* | */node_modules/* | node_modules/*) continue ;;
    esac
    [ -f "$file" ] || continue
    if [ -z "${seen[$file]:-}" ]; then
      seen[$file]=1
      files+=("$file")
    fi
  done
done

images=()
split_words "${INPUT_IMAGE:-}" images
if [ "${#files[@]}" -eq 0 ] && [ "${#images[@]}" -eq 0 ]; then
  echo "::warning title=gpuship lint::no Dockerfile matched: $INPUT_PATHS"
  write_output "exit-code=0"
  write_output "error-count=0"
  write_output "warning-count=0"
  write_output "note-count=0"
  exit 0
fi

args=(lint --sarif "$INPUT_SARIF_FILE")
[ -n "$INPUT_TARGET" ] && args+=(--target "$INPUT_TARGET")
build_args=()
split_words "$INPUT_BUILD_ARGS" build_args
for pair in "${build_args[@]}"; do args+=(--build-arg "$pair"); done
for image in "${images[@]}"; do args+=(--image "$image"); done
[ -n "${INPUT_PLATFORM:-}" ] && args+=(--platform "$INPUT_PLATFORM")

run_gpuship "${args[@]}" -- "${files[@]}"
status=$?
[ -f "$INPUT_SARIF_FILE" ] && write_output "sarif-file=$INPUT_SARIF_FILE"
exit "$status"
