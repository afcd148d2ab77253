#!/usr/bin/env bash
# Run `gpuship audit` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(audit --json-file "$INPUT_JSON_FILE")
labels=()
split_words "$INPUT_LABELS" labels
for label in "${labels[@]}"; do args+=(--label "$label"); done
[ -n "$INPUT_PUBLISH" ] && args+=(--publish "$INPUT_PUBLISH")
[ -n "$INPUT_IF_OLDER_THAN" ] && args+=(--if-older-than "$INPUT_IF_OLDER_THAN")

run_gpuship "${args[@]}"
status=$?
# Skipped as fresh (publish with if-older-than): no new audit, no file.
[ "$status" -eq 0 ] && [ -f "$INPUT_JSON_FILE" ] && write_output "json-file=$INPUT_JSON_FILE"
exit "$status"
