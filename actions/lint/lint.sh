#!/usr/bin/env bash
# Run `gpuship lint` from action inputs (environment only). Globs are expanded by bash
# (globstar, no eval), so an input can select files but never run a command.
set -uo pipefail
shopt -s globstar nullglob dotglob

split() { # split "$1" on spaces, commas and newlines into the array named "$2"
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}

split "$INPUT_PATHS" patterns
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

write_output() { [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1" >>"$GITHUB_OUTPUT"; }

split "${INPUT_IMAGE:-}" images
if [ "${#files[@]}" -eq 0 ] && [ "${#images[@]}" -eq 0 ]; then
  echo "::warning title=gpuship lint::no Dockerfile matched: $INPUT_PATHS"
  write_output "exit-code=0"
  write_output "error-count=0"
  write_output "warning-count=0"
  write_output "note-count=0"
  exit 0
fi

args=(lint --sarif "$INPUT_SARIF_FILE")
[ -n "$INPUT_FAIL_ON" ] && args+=(--fail-on "$INPUT_FAIL_ON")
[ -n "$INPUT_TARGET" ] && args+=(--target "$INPUT_TARGET")
split "$INPUT_BUILD_ARGS" build_args
for pair in "${build_args[@]}"; do args+=(--build-arg "$pair"); done
for image in "${images[@]}"; do args+=(--image "$image"); done
[ -n "${INPUT_PLATFORM:-}" ] && args+=(--platform "$INPUT_PLATFORM")
config=()
[ -n "$INPUT_CONFIG" ] && config=(--config "$INPUT_CONFIG")

"$GPUSHIP" "${config[@]}" "${args[@]}" -- "${files[@]}"
status=$?
write_output "exit-code=$status"
[ -f "$INPUT_SARIF_FILE" ] && write_output "sarif-file=$INPUT_SARIF_FILE"
exit "$status"
