#!/usr/bin/env bash
# 50 runners x 50 images: gpuship route from a registry inventory vs gpuship fleet from files.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
exec .venv/bin/python bench/route/run.py "$@"
