#!/usr/bin/env bash
set -euo pipefail
. /opt/build/versions.env
pip install --no-cache-dir "transformers==${TRANSFORMERS_VERSION}" accelerate==1.3.0
if [ -n "${WITH_DEEPSPEED:-}" ]; then
  pip install --no-cache-dir deepspeed==0.16.3
fi
