#!/usr/bin/env bash
# Second step of the root action: run `gpuship COMMAND ARGS...` from action inputs.
#
# Inputs arrive as environment variables only. The free-form `args` input is split by
# Python's shlex (quotes honoured, nothing expanded or executed) into a bash array; no eval.
set -uo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

words="$(mktemp)"
trap 'rm -f "$words"' EXIT
"$GPUSHIP_VENV_PYTHON" -I - "$words" <<'PY' || exit 2
import os, shlex, sys
try:
    words = shlex.split(os.environ.get("INPUT_ARGS", ""))
except ValueError as exc:
    print(f"::error title=gpuship::input args: {exc}")
    sys.exit(2)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write("".join(word + "\0" for word in words))
PY
mapfile -d '' -t args <"$words"

run_gpuship "$INPUT_COMMAND" "${args[@]}"
