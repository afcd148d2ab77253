#!/usr/bin/env bash
# 200 hosts x 100 images: gpuship fleet plan with one change vs gpuship fleet on the same files.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
exec .venv/bin/python bench/fleet-plan/run.py "$@"
