#!/usr/bin/env bash
# Run `gpuship promote` from action inputs (environment only; lists split without globbing).
set -uo pipefail

split() { # split "$1" on spaces, commas and newlines into the array named "$2"
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}

args=(promote "$INPUT_SOURCE" --record-file "$INPUT_RECORD_FILE"
  --instructions-file "$INPUT_INSTRUCTIONS_FILE")
split "$INPUT_TAGS" tags
split "$INPUT_MOVE" moves
for tag in "${tags[@]}"; do args+=(--tag "$tag"); done
for tag in "${moves[@]}"; do args+=(--move "$tag"); done
[ -n "$INPUT_TO" ] && args+=(--to "$INPUT_TO")
config=()
[ -n "$INPUT_CONFIG" ] && config=(--config "$INPUT_CONFIG")

"$GPUSHIP" "${config[@]}" "${args[@]}"
status=$?
[ -n "${GITHUB_OUTPUT:-}" ] && echo "exit-code=$status" >>"$GITHUB_OUTPUT"
if [ "$status" -eq 0 ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$INPUT_INSTRUCTIONS_FILE" ]; then
  cat "$INPUT_INSTRUCTIONS_FILE" >>"$GITHUB_STEP_SUMMARY"
fi
exit "$status"
