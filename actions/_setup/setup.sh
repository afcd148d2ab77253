#!/usr/bin/env bash
# Shared first step of every gpuship action.
#
# Installs gpuship's pinned, hash-locked dependencies (requirements/action.txt) into a venv
# in the runner's tool cache, keyed by the lock's hash, OS, architecture and Python version:
# a second job on the same self-hosted runner starts in a second, and on GitHub-hosted runners
# (whose tool cache is new each job) the action's actions/cache step restores the venv before
# this runs. Needs only `python3` (3.10+): no setup-python. Linux x86_64/arm64 and macOS; a
# clear error elsewhere (plan.sh). Writes the step outputs `gpuship` (a command that runs this
# checkout of gpuship) and `python` (the venv's interpreter).
#
# Input (environment only): GPUSHIP_PYTHON, the interpreter to build the venv with.
set -euo pipefail

# Platform check, interpreter, venv path and cache key (shared with the `plan` step).
# shellcheck source=actions/_setup/plan.sh
. "$(dirname "${BASH_SOURCE[0]}")/plan.sh"
mkdir -p "$cache"

if [ ! -f "$venv/.complete" ]; then
  echo "::group::gpuship: installing pinned dependencies into $venv"
  # Build beside the final place and rename: concurrent jobs never see a half-built venv.
  tmp="$(mktemp -d "$cache/.building-XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  pip_args=(install --quiet --disable-pip-version-check --no-input --require-hashes --no-deps -r "$lock")
  if "$python" -m venv "$tmp/venv" >/dev/null 2>&1; then
    "$tmp/venv/bin/python" -m pip "${pip_args[@]}"
  elif "$python" -m venv --without-pip "$tmp/venv" && "$python" -m pip --version >/dev/null 2>&1; then
    # Debian without python3-venv: no ensurepip, but the system pip can target the venv.
    "$python" -m pip --python "$tmp/venv/bin/python" "${pip_args[@]}"
  else
    fail "cannot create a virtual environment with '$python'; install python3-venv (Debian/Ubuntu) or python3-pip"
  fi
  touch "$tmp/venv/.complete"
  rm -rf "$venv"
  # rename(2): atomic, and it fails rather than nesting when a concurrent job got there first
  # (GNU `mv -T` does the same, but macOS has no -T).
  "$python" -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$tmp/venv" "$venv" \
    2>/dev/null || true
  echo "::endgroup::"
fi

bin_dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gpuship-bin-XXXXXX")"
cat >"$bin_dir/gpuship" <<WRAPPER
#!/usr/bin/env bash
# Runs gpuship from the action's own checkout with the cached, locked dependencies.
PYTHONPATH='$root/src' exec '$venv/bin/python' -s -m gpuship "\$@"
WRAPPER
chmod +x "$bin_dir/gpuship"

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "gpuship=$bin_dir/gpuship"
    echo "python=$venv/bin/python"
  } >>"$GITHUB_OUTPUT"
fi
echo "gpuship $("$bin_dir/gpuship" --version | cut -d' ' -f2) ready (Python $pyver, $venv)"
