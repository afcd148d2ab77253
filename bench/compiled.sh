# shellcheck shell=bash
# Sourced by the benchmarks: measure gpuship as installed, from bytecode.
#
# pip compiles every module when it installs gpuship, and the actions' interpreter writes
# bytecode on first import. A shell with PYTHONDONTWRITEBYTECODE=1 (some CI images and agent
# sandboxes set it) would instead make every measured run recompile each module changed since
# its last compile: 0.1 s and more per run, which earlier figures here included unknowingly.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q src >/dev/null
