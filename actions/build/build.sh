#!/usr/bin/env bash
# Run `gpuship build` from action inputs (environment only; lists split without globbing).
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

args=(build --builder "$INPUT_BUILDER")
if [ -n "$INPUT_CELL" ]; then
  args+=(--cell "$INPUT_CELL")
else
  args+=(--image "$INPUT_IMAGE")
  pairs=()
  split_items "$INPUT_SET" pairs
  for pair in "${pairs[@]}"; do
    pair="${pair#"${pair%%[![:space:]]*}"}"
    [ -n "$pair" ] && args+=(--set "$pair")
  done
fi
is_true push "$INPUT_PUSH" || args+=(--no-push)
is_true image-checks "$INPUT_IMAGE_CHECKS" || args+=(--no-image-checks)
[ -n "$INPUT_COMMIT" ] && args+=(--commit "$INPUT_COMMIT")
[ -n "$INPUT_NETWORK" ] && args+=(--network "$INPUT_NETWORK")
[ -n "$INPUT_LOCK" ] && args+=(--lock "$INPUT_LOCK")
# BuildKit secrets by reference (ID=VARIABLE, ID=PATH); values come in GPUSHIP_BUILD_SECRETS.
items=()
split_words "$INPUT_SECRET_ENVS" items
for item in "${items[@]}"; do args+=(--secret "id=${item%%=*},env=${item#*=}"); done
items=()
split_items "$INPUT_SECRET_FILES" items
for item in "${items[@]}"; do
  item="${item#"${item%%[![:space:]]*}"}"
  [ -n "$item" ] && args+=(--secret "id=${item%%=*},src=${item#*=}")
done
items=()
split_words "$INPUT_SSH" items
for item in "${items[@]}"; do args+=(--ssh "$item"); done
[ -n "$INPUT_PROVENANCE" ] && args+=(--provenance "$INPUT_PROVENANCE")
[ -n "$INPUT_SBOM" ] && args+=(--sbom "$INPUT_SBOM")

run_gpuship "${args[@]}"
