#!/usr/bin/env bash
# Run `gpuship lint` from action inputs (environment only). The globs go to gpuship as they
# are (no shell expansion): gpuship expands them with the same skip list as its directory
# search, and writes the count, failed and sarif-file outputs and the summary itself.
set -uo pipefail
# shellcheck source=../_setup/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../_setup/common.sh"

patterns=()
split_words "$INPUT_PATHS" patterns
args=(lint --sarif "$INPUT_SARIF_FILE")
[ -n "$INPUT_TARGET" ] && args+=(--target "$INPUT_TARGET")
build_args=()
split_words "$INPUT_BUILD_ARGS" build_args
for pair in "${build_args[@]}"; do args+=(--build-arg "$pair"); done
images=()
split_words "${INPUT_IMAGE:-}" images
for image in "${images[@]}"; do args+=(--image "$image"); done
[ -n "${INPUT_PLATFORM:-}" ] && args+=(--platform "$INPUT_PLATFORM")

run_gpuship "${args[@]}" -- "${patterns[@]}"
