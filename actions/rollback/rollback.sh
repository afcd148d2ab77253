#!/usr/bin/env bash
# Run `gpuship rollback` from action inputs (environment only).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(rollback "$INPUT_TAG" --record-file "$INPUT_RECORD_FILE"
  --instructions-file "$INPUT_INSTRUCTIONS_FILE")
[ -n "$INPUT_TO" ] && args+=(--to "$INPUT_TO")
[ -n "$INPUT_EXPECT" ] && args+=(--expect "$INPUT_EXPECT")

is_true dry-run "$INPUT_DRY_RUN" && args+=(--dry-run)

run_gpuship "${args[@]}"
