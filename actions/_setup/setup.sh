#!/usr/bin/env bash
# Shared first step of every gpuship action.
#
# Installs gpuship's pinned, hash-locked dependencies (requirements/action.txt) into a venv
# cached in the runner's tool cache, keyed by the lock's hash and the Python version, so a
# second job on the same self-hosted runner starts in a second. Needs only `python3` (3.10+):
# no setup-python. Writes the step outputs `gpuship` (a command that runs this checkout of
# gpuship) and `python` (the venv's interpreter).
#
# Input (environment only): GPUSHIP_PYTHON, the interpreter to build the venv with.
set -euo pipefail

fail() {
  echo "::error title=gpuship setup::$1"
  exit 3
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${GPUSHIP_PYTHON:-python3}"
lock="$root/requirements/action.txt"

command -v "$python" >/dev/null 2>&1 ||
  fail "Python interpreter '$python' not found on this runner; install python3 (3.10 or newer) or set the 'python' input"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "gpuship needs Python 3.10 or newer; '$python' is $("$python" -V 2>&1)"

pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
lock_hash="$(sha256sum "$lock" | cut -c1-16)"
cache="${RUNNER_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}}/gpuship"
venv="$cache/venv-py$pyver-$lock_hash"
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
  mv -T "$tmp/venv" "$venv" 2>/dev/null || true
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
