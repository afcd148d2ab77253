"""Write the Dockerfiles of bench/lint-scale: each shape of stage graph that lint's time or
memory once grew with the square of, at a given size (stages, or ARGs for `args`).

Usage: python shapes.py OUT_DIR SIZE...   (writes OUT_DIR/<shape>-<size>/Dockerfile)
"""

from __future__ import annotations

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


def main() -> None:
    out = Path(sys.argv[1])
    for size in map(int, sys.argv[2:]):
        for name, shape in SHAPES.items():
            directory = out / f"{name}-{size}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "Dockerfile").write_text(shape(size))
            (directory / "a").write_text("a\n")


if __name__ == "__main__":
    main()
