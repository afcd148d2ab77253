#!/usr/bin/env bash
# Lint one Dockerfile, the whole corpus (56 files) and 8 copies of it (448) in one process each, with
# gpuship and with hadolint, timed by hyperfine in one run; then record which problems each
# tool reports per corpus case (compare.py).
# Usage: bench/lint/run.sh   (from the repository root; writes bench/.work/lint/*)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/compiled.sh
. bench/compiled.sh
venv=.venv/bin
out=bench/.work/lint
mkdir -p "$out"
files=(tests/corpus/*/Dockerfile)
# One Dockerfile, as an editor or a pre-commit hook runs it: start-up is most of the cost.
one=tests/corpus/heredoc-setup/Dockerfile
hyperfine --warmup 3 --runs 30 --export-json "$out/hyperfine-1.json" \
  --command-name gpuship "$venv/gpuship lint --fail-on never --format json $one > /dev/null" \
  --command-name hadolint "$venv/hadolint --no-fail --format json $one > /dev/null"
hyperfine --warmup 3 --runs 30 --export-json "$out/hyperfine.json" \
  --command-name gpuship "$venv/gpuship lint --fail-on never --format json ${files[*]} > /dev/null" \
  --command-name hadolint "$venv/hadolint --no-fail --format json ${files[*]} > /dev/null"
# Eight copies of the corpus, contexts included: what a monorepo run costs once start-up is
# paid. Copies, not the same paths repeated: gpuship lints a path given twice once.
rm -rf "$out/x8"
many=()
for copy in 1 2 3 4 5 6 7 8; do
  mkdir -p "$out/x8/$copy"
  cp -R tests/corpus/. "$out/x8/$copy/"
  many+=("$out/x8/$copy"/*/Dockerfile)
done
hyperfine --warmup 1 --runs 5 --export-json "$out/hyperfine-x8.json" \
  --command-name gpuship "$venv/gpuship lint --fail-on never --format json ${many[*]} > /dev/null" \
  --command-name hadolint "$venv/hadolint --no-fail --format json ${many[*]} > /dev/null"
"$venv/python" bench/lint/compare.py "$out/hyperfine-1.json" "$out/hyperfine.json" \
  "$out/hyperfine-x8.json"
