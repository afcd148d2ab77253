"""What a one-file `gpuship lint` spends its start-up on, one child process per layer.

Run by bench/startup/anatomy.sh (hyperfine alternates the layers); each invocation is one layer:

  stdlib FILE      imports only the modules outside gpuship that `gpuship lint FILE` loads
                   (standard library and dependencies), in the order lint loads them
  cli              imports gpuship's CLI (`gpuship.cli.main`), as `gpuship --version` does
  imports FILE     imports every module `gpuship lint FILE` loads, and lints nothing
  free-records FILE    the same, with `dataclasses.dataclass` made to return the class as
                   written but for a plain `__init__` (no generated methods): what defining
                   the records costs
  lazy-regex FILE  the same, with `re.compile` deferred to first use: what compiling costs
  lint FILE        the whole run, as `gpuship lint --fail-on never FILE`

The two patched layers are measurements only: the modules import, nothing is linted with
them. `modules FILE` prints the list the other layers import (computed in a child, once).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_LIST = """
import io, json, sys
before = list(sys.modules)
from gpuship.cli.main import main
main(["lint", "--fail-on", "never", sys.argv[1]], stdout=io.StringIO())
print(json.dumps([m for m in sys.modules if m not in before]))
"""


def modules(path: str) -> list[str]:
    """The modules `gpuship lint PATH` imports beyond the interpreter's own start-up."""
    import subprocess  # here: the measured layers never call this

    done = subprocess.run(
        [sys.executable, "-c", _LIST, path], capture_output=True, text=True, check=True
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def _import_all(names: list[str]) -> None:
    for name in names:
        importlib.import_module(name)


def _free_records() -> None:
    def init(self: object, *args: object, **kwargs: object) -> None:
        # Enough for the records some modules make at import; defaults stay class attributes.
        names = list(type(self).__annotations__)
        for name, value in [*zip(names, args, strict=False), *kwargs.items()]:
            object.__setattr__(self, name, value)

    def as_written(cls: Any) -> Any:
        cls.__init__ = init
        return cls

    def record(cls: Any = None, /, **_: object) -> Any:
        return as_written if cls is None else as_written(cls)

    dataclasses.dataclass = record


def _lazy_regex() -> None:
    compile_now = re.compile

    class Deferred:
        def __init__(self, pattern: Any, flags: int = 0) -> None:
            self._args = (pattern, flags)
            self._compiled: re.Pattern[Any] | None = None

        def __getattr__(self, name: str) -> Any:
            if self._compiled is None:
                self._compiled = compile_now(*self._args)
            return getattr(self._compiled, name)

    re.compile = Deferred  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    layer, *rest = argv
    if layer == "cli":
        importlib.import_module("gpuship.cli.main")
        return 0
    if layer == "lint":
        from gpuship.cli.main import main as gpuship

        return gpuship(["lint", "--fail-on", "never", *rest])
    names = json.loads(Path(rest[1]).read_text()) if len(rest) > 1 else modules(rest[0])
    if layer == "modules":
        print(json.dumps(names))
        return 0
    patches: dict[str, Callable[[], None]] = {
        "free-records": _free_records,
        "lazy-regex": _lazy_regex,
    }
    if layer in patches:
        patches[layer]()
    if layer == "stdlib":
        names = [n for n in names if n.partition(".")[0] != "gpuship"]
    _import_all(names)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
