"""Write the Dockerfiles of bench/lint-scale: each shape of stage graph that lint's time or
memory once grew with the square of, at a given size (stages, or ARGs for `args`), and the
shapes whose build context grows with the file (size = RUNs or COPYs: see each).

Usage: python shapes.py OUT_DIR SIZE...   (writes OUT_DIR/<shape>-<size>/Dockerfile and the
       context files beside it; ONLY="make-runs context-copies" writes those shapes alone)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path


def copy_chain(n: int) -> str:
    """Each stage copies from the one before: one target that builds them all."""
    first = "FROM scratch AS s0\nCOPY a /a\n"
    stages = (f"FROM scratch AS s{i}\nCOPY --from=s{i - 1} /a /a\n" for i in range(1, n))
    return first + "".join(stages)


def from_chain(n: int) -> str:
    """Each stage is built FROM the one before and adds an ENV: a FROM chain n deep."""
    first = "FROM python:3.12 AS s0\n"
    stages = (f"FROM s{i - 1} AS s{i}\nENV V{i}={i}\nRUN echo $V{i}\n" for i in range(1, n))
    return first + "".join(stages)


def targets(n: int) -> str:
    """n independent stages: n targets, each linted."""
    return "ARG V=1\n" + "".join(
        f"FROM python:3.12 AS s{i}\nARG V\nENV E{i}=$V\nRUN pip install x{i}\n" for i in range(n)
    )


def args(n: int) -> str:
    """One stage of n ARGs, each followed by a RUN that uses it."""
    return "FROM python:3.12\n" + "".join(f"ARG A{i}=v{i}\nRUN echo $A{i}\n" for i in range(n))


def mounts(n: int) -> str:
    """Each stage mounts the one before (`RUN --mount=from=`)."""
    first = "FROM python:3.12 AS s0\nRUN true\n"
    return first + "".join(
        f"FROM python:3.12 AS s{i}\nRUN --mount=type=bind,from=s{i - 1},target=/x true\n"
        for i in range(1, n)
    )


def variable_refs(n: int) -> str:
    """Each stage copies from `${X}-<i-1>`: n patterns tried against n stage names."""
    first = "ARG X=s\nFROM python:3.12 AS s-0\nRUN true\n"
    return first + "".join(
        f"FROM python:3.12 AS s-{i}\nARG X\nCOPY --from=${{X}}-{i - 1} /a /a\n" for i in range(1, n)
    )


def scripts(n: int) -> str:
    """A FROM chain whose stages each run a script: each RUN looks for the script's COPY up
    its whole FROM chain."""
    first = "FROM python:3.12 AS s0\nCOPY a /opt/a\n"
    stages = (f"FROM s{i - 1} AS s{i}\nRUN ./install-{i}.sh\n" for i in range(1, n))
    return first + "".join(stages)


def tree(n: int) -> str:
    """A chain of n/2 stages, then n/2 targets each built FROM its end."""
    half = n // 2
    chain = "FROM python:3.12 AS c0\nRUN true\n" + "".join(
        f"FROM c{i - 1} AS c{i}\nRUN echo {i}\n" for i in range(1, half)
    )
    return chain + "".join(f"FROM c{half - 1} AS l{i}\nRUN echo {i}\n" for i in range(n - half))


SHAPES: dict[str, Callable[[int], str]] = {
    "copy-chain": copy_chain,
    "from-chain": from_chain,
    "targets": targets,
    "args": args,
    "mounts": mounts,
    "variable-refs": variable_refs,
    "scripts": scripts,
    "tree": tree,
}


def make_runs(n: int) -> dict[str, str]:
    """n `RUN make tI` and a Makefile of 2n chained targets, one of which downloads a model:
    the Makefile was parsed again for each `make` (three times)."""
    rules = "".join(f"t{i}: t{i + 1}\n\techo {i}\n" for i in range(2 * n))
    download = "t7:\n\thuggingface-cli download org/m --local-dir /models/m\n"
    runs = "".join(f"RUN make t{i}\n" for i in range(n))
    return {
        "Makefile": rules + download,
        "Dockerfile": f"FROM python:3.12\nCOPY Makefile /app/\nWORKDIR /app\n{runs}",
    }


def context_copies(n: int) -> dict[str, str]:
    """n `COPY src/dI` of a context of n directories of 20 files (20n files): every context
    file was scanned for each COPY source, by three checks."""
    files = {f"src/d{i}/f{j}.txt": "x\n" for i in range(n) for j in range(20)}
    copies = "".join(f"COPY src/d{i} /opt/d{i}/\n" for i in range(n))
    return files | {"Dockerfile": f"FROM python:3.12\n{copies}"}


def requirements(n: int) -> dict[str, str]:
    """n `COPY rI.txt` each installed by a `RUN pip install -r`: n context files, n COPYs."""
    files = {f"r{i}.txt": f"numpy=={i}.0\n" for i in range(n)}
    lines = "".join(f"COPY r{i}.txt /app/\nRUN pip install -r /app/r{i}.txt\n" for i in range(n))
    return files | {"Dockerfile": f"FROM python:3.12\n{lines}"}


def copies_then_rm(n: int) -> dict[str, str]:
    """n COPYs, then n `RUN rm -rf` of paths none of them added (GSL701 compared each with
    every path added so far)."""
    copies = "".join(f"COPY a /d{i}/a\n" for i in range(n))
    deletions = "".join(f"RUN rm -rf /x{i}\n" for i in range(n))
    return {"a": "a\n", "Dockerfile": f"FROM python:3.12\n{copies}{deletions}"}


CONTEXT_SHAPES: dict[str, Callable[[int], dict[str, str]]] = {
    "make-runs": make_runs,
    "context-copies": context_copies,
    "requirements": requirements,
    "copies-then-rm": copies_then_rm,
}


def main() -> None:
    out = Path(sys.argv[1])
    only = set(os.environ.get("ONLY", "").split())
    shapes: dict[str, Callable[[int], dict[str, str]]] = {
        name: lambda n, shape=shape: {"Dockerfile": shape(n), "a": "a\n"}
        for name, shape in SHAPES.items()
    } | CONTEXT_SHAPES
    for size in map(int, sys.argv[2:]):
        for name, shape in shapes.items():
            if only and name not in only:
                continue
            directory = out / f"{name}-{size}"
            for path, text in shape(size).items():
                (directory / path).parent.mkdir(parents=True, exist_ok=True)
                (directory / path).write_text(text)


if __name__ == "__main__":
    main()
