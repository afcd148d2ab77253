#!/usr/bin/env bash
# Run `gpuship promote` from action inputs (environment only; lists split without globbing).
# The job summary (with the rollback instructions) and the outputs are gpuship's own.
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(promote "$INPUT_SOURCE" --record-file "$INPUT_RECORD_FILE"
  --instructions-file "$INPUT_INSTRUCTIONS_FILE")
tags=()
moves=()
split_words "$INPUT_TAGS" tags
split_words "$INPUT_MOVE" moves
for tag in "${tags[@]}"; do args+=(--tag "$tag"); done
for tag in "${moves[@]}"; do args+=(--move "$tag"); done
[ -n "$INPUT_TO" ] && args+=(--to "$INPUT_TO")

is_true dry-run "$INPUT_DRY_RUN" && args+=(--dry-run)

run_gpuship "${args[@]}"
