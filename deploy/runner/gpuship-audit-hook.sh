#!/usr/bin/env bash
# Keep this runner's entry of the gpuship fleet inventory fresh. Two ways to run it:
#   - as the runner's job-started hook: ACTIONS_RUNNER_HOOK_JOB_STARTED=/path/to/this/script
#     in the runner's .env file (GitHub runs it before every job, in "Set up runner");
#   - from the gpuship-audit.timer systemd unit beside this file.
# It reads the host and publishes when the entry is older than GPUSHIP_AUDIT_EVERY or no longer
# reads as the host does (a driver update, a regenerated CDI spec, new labels: published at the
# next call), gives up after GPUSHIP_AUDIT_TIMEOUT seconds, and always exits 0: a registry that
# is down costs a warning line, never the job (a job-started hook that exits non-zero fails it).
#
# Settings, from the runner's .env file (or the unit's EnvironmentFile):
#   GPUSHIP_FLEET          REGISTRY/REPO of the inventory (required; e.g. ghcr.io/acme/gpu-fleet)
#   GPUSHIP_RUNNER_LABELS  the runner's pool labels, separated by commas or spaces
#   GPUSHIP_RUNNER_NAME    the runner's name, so the hook and the timer publish one entry
#                          (default: RUNNER_NAME, which GitHub sets for jobs and hooks)
#   GPUSHIP_AUDIT_EVERY    publish when the entry is older than this (default 30m), or at
#                          once when the host reads differently
#   GPUSHIP_AUDIT_TIMEOUT  seconds before giving up (default 60)
#   GPUSHIP                the gpuship executable (default: gpuship on PATH)
set -u

fleet=${GPUSHIP_FLEET:-}
if [ -z "$fleet" ]; then
  echo "gpuship audit hook: GPUSHIP_FLEET is not set; nothing published" >&2
  exit 0
fi
export RUNNER_NAME="${GPUSHIP_RUNNER_NAME:-${RUNNER_NAME:-}}"

# Findings (GSQ204 for a runner without labels among them) are printed, never a failure: the
# exit code then says only whether the audit was published (0), or not (2 input, 3 registry
# or environment, 124 timeout, anything else), whatever fail-on gpuship.yaml sets.
args=(audit --publish "$fleet" --if-older-than "${GPUSHIP_AUDIT_EVERY:-30m}" --format text
  --fail-on never)
labels=()
IFS=$' \t\n,' read -r -a labels <<<"${GPUSHIP_RUNNER_LABELS:-}" || true
for label in "${labels[@]}"; do args+=(--label "$label"); done

# Not the job's step summary or outputs: the hook reports in its own log lines only.
status=0
timeout --kill-after=5 "${GPUSHIP_AUDIT_TIMEOUT:-60}" \
  env -u GITHUB_STEP_SUMMARY -u GITHUB_OUTPUT "${GPUSHIP:-gpuship}" "${args[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  reason="exit $status"
  [ "$status" -eq 124 ] && reason="no answer within ${GPUSHIP_AUDIT_TIMEOUT:-60}s"
  echo "::warning title=gpuship audit::runner audit not published to $fleet ($reason); the job runs anyway"
fi
exit 0
