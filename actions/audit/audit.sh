#!/usr/bin/env bash
# Run `gpuship audit` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(audit --json-file "$INPUT_JSON_FILE")
labels=()
split_words "$INPUT_LABELS" labels
for label in "${labels[@]}"; do args+=(--label "$label"); done

run_gpuship "${args[@]}"
status=$?
[ "$status" -eq 0 ] && write_output "json-file=$INPUT_JSON_FILE"
exit "$status"
