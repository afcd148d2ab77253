#!/usr/bin/env bash
# Run `gpuship prune` from action inputs (environment only).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(prune "$INPUT_REPOSITORY")
is_true apply "$INPUT_APPLY" && args+=(--apply)

run_gpuship "${args[@]}"
