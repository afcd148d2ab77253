#!/usr/bin/env bash
# Shared first step of every gpuship action.
#
# Installs gpuship's pinned, hash-locked dependencies (requirements/action.txt) into a fresh
# venv private to this job, from wheels cached in the runner's tool cache (keyed by the lock's
# hash, OS, architecture and Python version; on GitHub-hosted runners, whose tool cache is new
# each job, the action's actions/cache step restores them first). The cache is not trusted
# (README.md, threat model): install.py matches every cached file against the lock's hashes
# before unpacking it, and wheels that do not match are downloaded again. Wheels only
# (`--only-binary :all:`): no source package is ever built. Needs only `python3` (3.10+): no
# setup-python. Linux x86_64/arm64 and macOS; a clear error elsewhere (plan.sh). Writes the
# step outputs `gpuship` (a command that runs this checkout of gpuship) and `python` (the
# venv's interpreter).
#
# Input (environment only): GPUSHIP_PYTHON, the interpreter to build the venv with.
set -euo pipefail

# Platform check, interpreter, wheel cache path and key (shared with the `plan` step).
# shellcheck source=actions/_setup/plan.sh
. "$(dirname "${BASH_SOURCE[0]}")/plan.sh"

# download DIR: the locked wheels for this interpreter into DIR, each checked against the lock
# by pip. The pip that runs is the interpreter's own (ensurepip in a throwaway venv, or the
# system's on Debian without python3-venv), never one from the cache.
download() {
  local args=(download --quiet --disable-pip-version-check --no-input --only-binary :all:
    --require-hashes --no-deps -r "$lock" -d "$1")
  if "$python" -I -m venv "$build/pip" >/dev/null 2>&1; then
    "$build/pip/bin/python" -I -m pip "${args[@]}"
  elif "$python" -I -m pip --version >/dev/null 2>&1; then
    "$python" -I -m pip "${args[@]}"
  else
    fail "cannot run pip with '$python'; install python3-venv (Debian/Ubuntu) or python3-pip"
  fi
}

# The venv is made anew for each run, in a directory only this job can write.
private="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gpuship-XXXXXX")"
"$python" -I -m venv --without-pip "$private/venv" >/dev/null ||
  fail "cannot create a virtual environment with '$python'; install python3-venv (Debian/Ubuntu)"
install() { "$private/venv/bin/python" -I "$root/actions/_setup/install.py" "$lock" "$1" "$root/src"; }

# install.py exits 1 when the cached wheels do not match the lock (or there are none).
status=1 verdict=""
[ -e "$wheels" ] && { verdict="$(install "$wheels")" && status=0 || status=$?; }
[ "$status" -gt 1 ] && fail "installing the cached wheels failed: $verdict"
if [ "$status" -eq 1 ]; then
  [ -n "$verdict" ] && echo "::warning title=gpuship setup::${verdict}; downloading them again"
  echo "::group::gpuship: downloading pinned wheels into $wheels"
  mkdir -p "$cache"
  build="$(mktemp -d "$cache/.building-XXXXXX")"
  trap 'rm -rf "$build"' EXIT
  download "$build/wheels" ||
    fail "pip could not download a locked wheel of every requirement for Python $pyfull on $os $arch (wheels only, never a source build: scripts/check-wheels lists the gaps)"
  verdict="$(install "$build/wheels")" || fail "$verdict"
  # Kept for the next job: replace what was there, or leave it when another job got there
  # first (rename(2) fails rather than nesting; macOS's mv has no -T).
  rm -rf "$wheels" 2>/dev/null || true
  "$python" -I -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$build/wheels" "$wheels" \
    2>/dev/null || true
  echo "::endgroup::"
fi

# -I: neither the working directory (a checkout may hold an `argparse.py`) nor PYTHON* variables
# nor the user's site-packages reach gpuship's imports; install.py's .pth adds the checkout.
cat >"$private/gpuship" <<WRAPPER
#!/usr/bin/env bash
# Runs gpuship from the action's own checkout with the locked dependencies.
exec '$private/venv/bin/python' -I -m gpuship "\$@"
WRAPPER
chmod +x "$private/gpuship"

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "gpuship=$private/gpuship"
    echo "python=$private/venv/bin/python"
  } >>"$GITHUB_OUTPUT"
fi
echo "gpuship $("$private/gpuship" --version | cut -d' ' -f2) ready (Python $pyver, $private/venv)"
