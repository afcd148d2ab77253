#!/usr/bin/env bash
# The Dockerfile parser: (1) differential run against BuildKit's own parser (the `dockerfile`
# wheel, x86_64 only) over 10,000 random Dockerfiles plus 3,333 random texts and the test
# corpus; (2) issue 19's hostile inputs timed through both parsers and `gpuship lint`.
# Usage: bench/parser/run.sh   (from anywhere; writes bench/.work/parser/*)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/.work/parser
mkdir -p "$out"
rm -f "$out/oracle-count"
echo "== differential run (10,000 + 3,333 generated cases)"
GPUSHIP_ORACLE_EXAMPLES=10000 GPUSHIP_ORACLE_COUNT_FILE="$out/oracle-count" \
  .venv/bin/pytest tests/unit/lint/test_parser_oracle.py -q -p no:cacheprovider \
  | tee "$out/oracle.log" | tail -3
echo "generated cases compared: $(cat "$out/oracle-count")"
echo "== hostile inputs"
.venv/bin/python bench/parser/cases.py "$out" | tee "$out/cases.md"
