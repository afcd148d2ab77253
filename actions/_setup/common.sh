# shellcheck shell=bash
# Sourced by every stage action's script: how inputs are read and how gpuship is run.
# Inputs arrive as INPUT_* environment variables only; nothing here evaluates them.

# split_words VALUE ARRAY: VALUE split on spaces, tabs, commas and newlines into ARRAY.
split_words() {
  IFS=$' \t\n,' read -r -d '' -a "$2" <<<"$1" || true
}

# split_items VALUE ARRAY: VALUE split on commas and newlines only (items may hold spaces).
split_items() {
  IFS=$'\n,' read -r -d '' -a "$2" <<<"$1" || true
}

# is_true NAME VALUE: the boolean input NAME is "true" or "1" (true), "false", "0" or empty
# (false). Any other value is one line naming the input (the value cut to 40 characters, each
# character but [A-Za-z0-9._-] shown as '?', so it can start no workflow command), the
# exit-code output 2, and exit 2: a typo (`dry-run: yes`) is never read as "false".
is_true() {
  case "$2" in
    true | 1) return 0 ;;
    false | 0 | "") return 1 ;;
  esac
  local shown="${2:0:40}"
  echo "::error title=gpuship::input $1: '${shown//[^A-Za-z0-9._-]/?}' is not 'true' or 'false'"
  write_output "exit-code=2"
  exit 2
}

# write_output NAME=VALUE: one step output, when running as a step.
write_output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1" >>"$GITHUB_OUTPUT"; fi
}

# run_gpuship ARGS...: gpuship with the config and fail-on inputs (when the action has
# them) before ARGS; sets the exit-code output and returns gpuship's status.
# A cancelled job's SIGINT and SIGTERM go to the step's own process only (this shell, which
# the action's `run:` execs), never to its children: they are passed on to gpuship, so a
# release stopped part-way puts back what it moved and says so (docs/operations/
# registry-access.md, stopped releases).
run_gpuship() {
  local global=()
  [ -n "${INPUT_CONFIG:-}" ] && global+=(--config "$INPUT_CONFIG")
  [ -n "${INPUT_FAIL_ON:-}" ] && global+=(--fail-on "$INPUT_FAIL_ON")
  # <&0: a background command would read /dev/null otherwise.
  "$GPUSHIP" "${global[@]}" "$@" <&0 &
  local child=$!
  trap 'kill -INT "$child" 2>/dev/null' INT
  trap 'kill -TERM "$child" 2>/dev/null' TERM
  local status again
  wait "$child"
  status=$?
  # A trapped signal ends `wait` early: wait on while gpuship runs (it puts back what it moved).
  while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    status=$?
  done
  # gpuship's own status, kept by bash once reaped (127 where a bash keeps none).
  wait "$child"
  again=$?
  [ "$again" -ne 127 ] && status=$again
  trap - INT TERM
  write_output "exit-code=$status"
  return "$status"
}
