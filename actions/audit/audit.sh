#!/usr/bin/env bash
# Run `gpuship audit` from action inputs (environment only; lists split without globbing).
set -uo pipefail

split() { # split "$1" on spaces, commas and newlines into the array named "$2"
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}

args=(audit --json-file "$INPUT_JSON_FILE")
split "$INPUT_LABELS" labels
for label in "${labels[@]}"; do args+=(--label "$label"); done
config=()
[ -n "$INPUT_CONFIG" ] && config=(--config "$INPUT_CONFIG")

"$GPUSHIP" "${config[@]}" "${args[@]}"
status=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "exit-code=$status" >>"$GITHUB_OUTPUT"
  [ "$status" -eq 0 ] && echo "json-file=$INPUT_JSON_FILE" >>"$GITHUB_OUTPUT"
fi
exit "$status"
