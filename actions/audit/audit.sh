#!/usr/bin/env bash
# Run `gpuship audit` from action inputs (environment only; lists split without globbing).
# gpuship sets the json-file output when it wrote the file (not when --if-older-than skipped).
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
