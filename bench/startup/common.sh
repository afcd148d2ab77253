# shellcheck shell=bash
# Sourced by bench/startup's side-by-side scripts (lint.sh, anatomy.sh, batch.sh), from the
# repository root, after bench/compiled.sh: `venv` (the test venv's bin), `out` (where results
# go, made here), `rounds` (ROUNDS, 3 by default), and the functions below.
# shellcheck disable=SC2034 # the variables are the caller's to use
venv="$PWD/.venv/bin"
out=bench/.work/startup
mkdir -p "$out"
rounds="${ROUNDS:-3}"

# one_file [FILE]: FILE, else the two-line apt Dockerfile the one-file measures default to
# (written to $out/Dockerfile), printed as a path.
one_file() {
  if [ -n "${1:-}" ]; then
    printf '%s\n' "$1"
    return
  fi
  printf 'FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y curl\n' >"$out/Dockerfile"
  printf '%s\n' "$out/Dockerfile"
}

# hyperfine_rounds JSON_PREFIX ROUNDS WARMUP RUNS: ROUNDS rounds of `hyperfine -N` over the
# caller's arrays `names` and `commands`, every command in every round, so that load drifting
# over the minutes a run takes touches each command alike; round N's results are written to
# JSON_PREFIX-N.json.
hyperfine_rounds() {
  local prefix=$1 rounds=$2 warmup=$3 runs=$4 round i args
  for round in $(seq 1 "$rounds"); do
    args=()
    # shellcheck disable=SC2154 # names and commands are the caller's
    for i in "${!names[@]}"; do
      args+=(--command-name "${names[$i]}" "${commands[$i]}")
    done
    hyperfine -N -i --warmup "$warmup" --runs "$runs" --export-json "$prefix-$round.json" \
      "${args[@]}" >/dev/null
  done
}
