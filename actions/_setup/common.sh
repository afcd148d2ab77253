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

# is_true VALUE: the action's boolean inputs are "true" or "1".
is_true() { [ "$1" = "true" ] || [ "$1" = "1" ]; }

# write_output NAME=VALUE: one step output, when running as a step.
write_output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1" >>"$GITHUB_OUTPUT"; fi
}

# run_gpuship ARGS...: gpuship with the config and fail-on inputs (when the action has
# them) before ARGS; sets the exit-code output and returns gpuship's status.
run_gpuship() {
  local global=()
  [ -n "${INPUT_CONFIG:-}" ] && global+=(--config "$INPUT_CONFIG")
  [ -n "${INPUT_FAIL_ON:-}" ] && global+=(--fail-on "$INPUT_FAIL_ON")
  "$GPUSHIP" "${global[@]}" "$@"
  local status=$?
  write_output "exit-code=$status"
  return "$status"
}
