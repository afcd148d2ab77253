"""Run one fuzz target under atheris (coverage-guided, libFuzzer inside).

    python tests/fuzz/run.py TARGET [libFuzzer flags] NEW_CORPUS_DIR SEED_CORPUS_DIR...

gpuship's modules are instrumented for coverage; the target's own file is not. libFuzzer
writes new interesting inputs into the first corpus directory only, so pass a scratch
directory first and `tests/fuzz/corpus/TARGET` after it to keep the committed seeds as they
are (merge new ones in deliberately: `-merge=1 tests/fuzz/corpus/TARGET NEW_CORPUS_DIR`).
A crash, a per-input timeout (`-timeout`) or an RSS past `-rss_limit_mb` stops the run with a
non-zero exit and writes the input to `-artifact_prefix`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

with atheris.instrument_imports(include=["gpuship"]):
    from fuzz.targets import TARGETS


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        raise SystemExit(f"usage: run.py {{{','.join(TARGETS)}}} [libFuzzer args]")
    target = TARGETS[sys.argv[1]]
    # libFuzzer re-runs argv[0] through the shell for -merge and -fork: make it this very
    # interpreter, script and target.
    itself = " ".join(shlex.quote(part) for part in (sys.executable, __file__, sys.argv[1]))
    atheris.Setup([itself, *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
