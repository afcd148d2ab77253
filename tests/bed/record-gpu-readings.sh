#!/usr/bin/env bash
# Record real GPU readings on a GPU machine (see tests/data/gpu-readings/README.md).
# Run from the repository root with the probes built by `gpu_probe.py build .gpu` and, where
# the machine cannot install packages, the action's wheels in .whl/. Writes into $OUT:
#   NAME-DRIVER.audit.json, .nvidia-smi.txt, .verify.json (host only), .probes.json
set -uo pipefail
out="${OUT:?set OUT to the folder the readings go to}"
probes="${1:-.gpu}"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/gpuship-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/gpuship-site
fi
export PYTHONPATH="$PWD/src:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9-')"
driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
base="$out/$name-$driver"
nvidia-smi -q >"$base.nvidia-smi.txt"
python3 -m gpuship audit --label "$name" --json-file "$base.audit.json"
echo "audit: exit $?"
python3 -m gpuship --format json verify --audit "$base.audit.json" >"$base.verify.json"
echo "verify (host): exit $?"
python3 tests/bed/gpu_probe.py record "$base.audit.json" "$probes" >"$base.probes.json"
echo "probes: exit $?"
python3 - "$base.probes.json" <<'PY'
import json, sys
for name, row in json.load(open(sys.argv[1])).items():
    print(f"{name:20} gpu={row['gpu_result']:36} verify exit={row['verify']['exit_code']}")
PY
