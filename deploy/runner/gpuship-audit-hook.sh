#!/usr/bin/env bash
# Keep this runner's entry of the gpuship fleet inventory fresh, then check that every running
# container started with GPUs still reaches them (`gpuship verify --running`: a daemon-reload
# or a driver reload takes the GPUs away from running containers). Two ways to run it:
#   - as the runner's job-started hook: ACTIONS_RUNNER_HOOK_JOB_STARTED=/path/to/this/script
#     in the runner's .env file (GitHub runs it before every job, in "Set up runner");
#   - from the gpuship-audit.timer systemd unit beside this file.
# It reads the host and publishes when the entry is older than GPUSHIP_AUDIT_EVERY or no longer
# reads as the host does (a driver update, a regenerated CDI spec, new labels: published at the
# next call), gives up after GPUSHIP_AUDIT_TIMEOUT seconds, and always exits 0: a registry that
# is down costs a warning line, never the job (a job-started hook that exits non-zero fails it).
#
# Settings, from the runner's .env file (or the unit's EnvironmentFile):
#   GPUSHIP_FLEET          REGISTRY/REPO of the inventory (e.g. ghcr.io/acme/gpu-fleet); unset:
#                          nothing is published, the running containers are still checked
#   GPUSHIP_RUNNER_LABELS  the runner's pool labels, separated by commas or spaces
#   GPUSHIP_RUNNER_NAME    the runner's name, so the hook and the timer publish one entry
#                          (default: RUNNER_NAME, which GitHub sets for jobs and hooks)
#   GPUSHIP_AUDIT_EVERY    publish when the entry is older than this (default 30m), or at
#                          once when the host reads differently
#   GPUSHIP_AUDIT_TIMEOUT  seconds before giving up (default 60)
#   GPUSHIP                the gpuship executable (default: gpuship on PATH)
#   GPUSHIP_CHECK_RUNNING  0 skips `verify --running` (default 1)
#   GPUSHIP_VERIFY_STRICT  1 exits with verify's status when it failed (the timer's unit sets it,
#                          so a container that lost its GPUs shows as a failed unit); the
#                          job-started hook leaves it unset and never fails the job
set -u

export RUNNER_NAME="${GPUSHIP_RUNNER_NAME:-${RUNNER_NAME:-}}"
timeout_s=${GPUSHIP_AUDIT_TIMEOUT:-60}

publish() {
  # Findings (GSQ204 for a runner without labels among them) are printed, never a failure: the
  # exit code then says only whether the audit was published (0), or not (2 input, 3 registry
  # or environment, 124 timeout, anything else), whatever fail-on gpuship.yaml sets.
  local fleet=$1 status=0 reason label
  local args=(audit --publish "$fleet" --if-older-than "${GPUSHIP_AUDIT_EVERY:-30m}" --format text
    --fail-on never)
  local labels=()
  IFS=$' \t\n,' read -r -a labels <<<"${GPUSHIP_RUNNER_LABELS:-}" || true
  for label in "${labels[@]}"; do args+=(--label "$label"); done

  # Not the job's step summary or outputs: the hook reports in its own log lines only.
  timeout --kill-after=5 "$timeout_s" \
    env -u GITHUB_STEP_SUMMARY -u GITHUB_OUTPUT "${GPUSHIP:-gpuship}" "${args[@]}" || status=$?
  if [ "$status" -ne 0 ]; then
    reason="exit $status"
    [ "$status" -eq 124 ] && reason="no answer within ${timeout_s}s"
    echo "::warning title=gpuship audit::runner audit not published to $fleet ($reason); the job runs anyway"
  fi
}

if [ -n "${GPUSHIP_FLEET:-}" ]; then
  publish "$GPUSHIP_FLEET"
else
  echo "gpuship audit hook: GPUSHIP_FLEET is not set; nothing published" >&2
fi

verified=0
if [ "${GPUSHIP_CHECK_RUNNING:-1}" != 0 ]; then
  # The host's checks (readiness GSV5xx) and one check inside each running GPU container
  # (GSV302); the findings name the container and how to recreate it.
  timeout --kill-after=5 "$timeout_s" \
    env -u GITHUB_STEP_SUMMARY -u GITHUB_OUTPUT "${GPUSHIP:-gpuship}" verify --running \
    --format text || verified=$?
  if [ "$verified" -ne 0 ]; then
    echo "::warning title=gpuship verify --running::this GPU host failed its checks (exit $verified): see the findings above"
  fi
fi
if [ "${GPUSHIP_VERIFY_STRICT:-0}" = 1 ]; then
  exit "$verified"
fi
exit 0
