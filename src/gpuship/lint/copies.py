"""Which COPY/ADD from the build context put a path of the image in place.

A stage sees its own earlier copies and every copy of its FROM chain, the latest first; a
directory copied to D puts what it holds below D. The copies are indexed once per file by the
path they fill (a file) or the directory they fill (a directory), in persistent maps that each
copy extends without copying the rest, a stage built FROM another starting from that one's
map. A lookup then costs the depth of the path and the copies that do fill it, not every copy
before it: each RUN of a thousand-stage chain that runs a script used to try every COPY of
the chain (27 s for 1,000 stages that each copy a file).
"""

from __future__ import annotations

import bisect
import heapq
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Union

from immutables import Map

from gpuship.dockerfile.source import Instruction
from gpuship.lint.context import BuildContext
from gpuship.lint.stages import Stage, State, expand_word


@dataclass(frozen=True)
class _Copy:
    """One context path a COPY/ADD copied: a file to `key`, or a directory to below `key`."""

    order: int  # the instruction's index: the latest copy wins
    position: int  # its source and matched item, in the order the instruction lists them
    item: str  # the path in the build context
    directory: bool  # a directory: it fills what lies below `key`
    key: str  # the path it fills, or for a directory the prefix ("/app/") it fills below


# Copies filling one key, the latest first: (copy, older) pairs, () when none.
_Stack = Union[tuple["_Copy", "_Stack"], tuple[()]]  # noqa: UP007 (a recursive alias)
_Table = Map[tuple[bool, str], _Stack]  # (directory?, key) -> copies filling it
_EMPTY: _Table = Map()


class CopyIndex:
    """The copies of a file's stages, indexed by the paths they fill."""

    def __init__(self, stages: Sequence[Stage], context: BuildContext) -> None:
        self._context = context
        # How many "/" the directory keys hold: a lookup builds the prefixes of its path at
        # these depths only (a path a thousand directories deep has a thousand prefixes).
        self._depths: set[int] = set()
        self._start: dict[int, _Table] = {}
        # Per stage: the index of each context copy, and the table after it.
        self._after: dict[int, tuple[list[int], list[_Table]]] = {}
        for stage in stages:  # a parent always comes earlier in the file
            table = self._final(stage.parent) if stage.parent is not None else _EMPTY
            self._start[stage.index] = table
            indexes: list[int] = []
            tables: list[_Table] = []
            for instruction, state in zip(stage.instructions, stage.states, strict=True):
                if instruction.keyword in ("COPY", "ADD") and not instruction.flag("from"):
                    table = _pushed(table, self._copies(instruction, state))
                    indexes.append(instruction.index)
                    tables.append(table)
            self._after[stage.index] = (indexes, tables)

    def source(self, stage: Stage, before: Instruction, container: str) -> str | None:
        """The context path that a COPY/ADD put at `container` before `before` (in `stage`
        or a stage of its FROM chain), or None."""
        indexes, tables = self._after[stage.index]
        at = bisect.bisect_left(indexes, before.index)
        table = tables[at - 1] if at else self._start[stage.index]
        stacks = [_walk(table.get((False, container), ()))]
        stacks += [_walk(table.get((True, key), ())) for key in self._prefixes(container)]
        for copy in heapq.merge(*stacks, key=lambda c: (-c.order, c.position)):
            if not copy.directory:
                return copy.item
            candidate = posixpath.normpath(f"{copy.item}/{container[len(copy.key) :]}")
            if self._context.sent(candidate):
                return candidate
        return None

    def _prefixes(self, container: str) -> Iterator[str]:
        """The directories above an absolute path that a directory copy may fill, as keys:
        /a/b/c -> /, /a/, /a/b/ (those with as many "/" as some key)."""
        if not self._depths:
            return
        deepest = max(self._depths)
        end = -1
        for depth in range(1, deepest + 1):
            end = container.find("/", end + 1)
            if end < 0:
                return
            if depth in self._depths:
                yield container[: end + 1]

    def _final(self, index: int) -> _Table:
        tables = self._after[index][1]
        return tables[-1] if tables else self._start[index]

    def _copies(self, instruction: Instruction, state: State) -> list[_Copy]:
        """What one COPY/ADD from the context fills, in the order its sources list it."""
        args = [a for a in instruction.args if not a.startswith("<<")]
        if len(args) < 2 or instruction.heredocs or not self._context.exists:
            return []
        *sources, raw_dest = (expand_word(a, state.env)[0] for a in args)
        dest = posixpath.normpath(posixpath.join(state.workdir, raw_dest))
        into_dir = raw_dest.endswith("/") or len(sources) > 1
        found: list[_Copy] = []
        items = (item for source in sources for item in self._context.match(source))
        for position, item in enumerate(items):
            if self._context.is_dir(item):
                below = dest.rstrip("/") + "/"
                self._depths.add(below.count("/"))
                found.append(_Copy(instruction.index, position, item, True, below))
                continue
            inside = posixpath.join(dest, posixpath.basename(item))
            found.append(_Copy(instruction.index, position, item, False, inside))
            if not into_dir:
                found.append(_Copy(instruction.index, position, item, False, dest))
        return found


def _pushed(table: _Table, copies: list[_Copy]) -> _Table:
    """`table` with `copies` on top of the stacks they fill, the first of them topmost."""
    if not copies:
        return table
    changed = table.mutate()
    for copy in reversed(copies):
        key = (copy.directory, copy.key)
        changed[key] = (copy, changed.get(key, ()))
    return changed.finish()


def _walk(stack: _Stack) -> Iterator[_Copy]:
    while stack:
        copy, stack = stack
        yield copy
