#!/usr/bin/env bash
# Where gpuship's locked wheels are cached on this runner and the cache key they are saved
# under; refuses an unsupported platform with one clear line. Sourced by setup.sh; run alone
# (the `plan` step of every action), it writes the step outputs `wheels` and `key` for
# actions/cache.
#
# Portable: Linux (x86_64, arm64) with GNU tools and macOS (arm64, x86_64) with bash 3.2 and
# BSD tools; no sha256sum (macOS has shasum), no `mv -T`, no arrays past bash 3.2.
# Input (environment only): GPUSHIP_PYTHON, the interpreter to build the venv with.
set -euo pipefail

fail() {
  echo "::error title=gpuship setup::$1"
  exit 3
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${GPUSHIP_PYTHON:-python3}"
lock="$root/requirements/action.txt"

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=macos ;;
  *) fail "gpuship actions run on Linux (x86_64, arm64) and macOS (arm64, x86_64) runners; this one is $(uname -s) $(uname -m)" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) fail "gpuship actions run on Linux (x86_64, arm64) and macOS (arm64, x86_64) runners; this one is $(uname -s) $(uname -m)" ;;
esac

command -v "$python" >/dev/null 2>&1 ||
  fail "Python interpreter '$python' not found on this runner; install python3 (3.10 or newer) or set the 'python' input"
"$python" -I -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "gpuship needs Python 3.10 or newer; '$python' is $("$python" -V 2>&1)"
pyver="$("$python" -I -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
pyfull="$("$python" -I -c 'import platform; print(platform.python_version())')"

# GNU coreutils has sha256sum, macOS has shasum; either prints the digest first.
if digest="$(sha256sum "$lock" 2>/dev/null)"; then :
elif digest="$(shasum -a 256 "$lock" 2>/dev/null)"; then :
else fail "neither sha256sum nor shasum works on this runner"
fi
lock_hash="$(printf '%s' "$digest" | cut -c1-16)"

cache="${RUNNER_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}}/gpuship"
wheels="$cache/wheels-$os-$arch-py$pyver-$lock_hash"
key="gpuship-wheels-$os-$arch-py$pyfull-$lock_hash"

if [ "${BASH_SOURCE[0]}" = "$0" ] && [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "wheels=$wheels"
    echo "key=$key"
  } >>"$GITHUB_OUTPUT"
fi
