"""The recipes `make TARGET` runs, read from a Makefile of the build context.

Enough of GNU make to see what a `RUN make models` does: rules `target ...: prerequisites`,
their tab-indented recipe lines (with `\\` continuations), and simple variable assignments
(`=`, `:=`, `::=`, `?=`) substituted into recipes as `$(NAME)` / `${NAME}`. Pattern rules,
functions, conditionals and includes are not evaluated: a recipe that uses them is taken as
written, with what it cannot resolve left unknown.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*([^=;#]*)(?:;(.*))?$")
_ASSIGNMENT = re.compile(
    r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*(::?=|\?=|=)\s*(.*)$"
)
_REFERENCE = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_.]*)[)}]")
MAX_DEPTH = 8  # prerequisite chains followed; deeper ones are left unread
# A recipe line longer than this once variables are substituted keeps them unsubstituted: a
# variable that names another many times over (`A = $(B)$(B)...`) would double on each level.
MAX_LINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Recipe:
    """One recipe line of a target: its shell text (make's `$$` as `$`) and its line."""

    target: str
    line: int
    text: str


def recipes(text: str, targets: list[str]) -> list[Recipe]:
    """The recipe lines `make targets` runs (the first target when none is named), with the
    recipes of their prerequisites first, each target once."""
    return Makefile.parse(text).recipes(targets)


# What a rule line gives each of its targets, shared by them all: its prerequisites, and its
# recipe lines (line number, text) as they are read. A target of several rules has several.
_Rule = tuple[list[str], list[tuple[int, str]]]


@dataclass(frozen=True)
class Makefile:
    """A parsed Makefile: read once, asked for the recipes of many `make` commands."""

    rules: dict[str, list[_Rule]]  # in the order targets first appear: the first is the default
    variables: dict[str, str]

    @classmethod
    def parse(cls, text: str) -> Makefile:
        rules: dict[str, list[_Rule]] = {}
        variables: dict[str, str] = {}
        current: _Rule | None = None
        for number, line in _logical_lines(text):
            if line.startswith("\t"):
                if current is not None:
                    current[1].append((number, line[1:].lstrip("@-+ \t")))
                continue
            stripped = line.split("#", 1)[0].rstrip()
            if not stripped.strip():
                continue  # a blank or comment line does not end the recipe
            current = None
            assignment = _ASSIGNMENT.match(stripped)
            if assignment is not None:
                name, operator, value = assignment.groups()
                if operator != "?=" or name not in variables:
                    variables[name] = value.strip()
                continue
            match = _RULE.match(stripped)
            if match is None:
                continue
            # .PHONY and other special targets are not targets to run.
            names = [t for t in match.group(1).split() if "%" not in t and not t.startswith(".")]
            prerequisites = [p for p in match.group(2).split() if "%" not in p]
            inline = [(number, match.group(3).strip())] if match.group(3) else []
            current = (prerequisites, inline)
            for name in names:
                rules.setdefault(name, []).append(current)
        return cls(rules, variables)

    def recipes(self, targets: list[str]) -> list[Recipe]:
        """The recipe lines `make targets` runs: see `recipes`."""
        wanted = targets or list(itertools.islice(self.rules, 1))
        found: list[Recipe] = []
        done: set[str] = set()
        # A rule's prerequisites, by id, once visited in full: the least depth they were. From
        # there or deeper, visiting them again adds nothing (each is done, or was too deep
        # then too), so `a1 ... aN: a1 ... aN` costs N per depth, not N per target.
        finished: dict[int, int] = {}

        def visit(target: str, depth: int) -> None:
            if target in done or depth > MAX_DEPTH or target not in self.rules:
                return
            done.add(target)
            for prerequisites, _ in self.rules[target]:
                if finished.get(id(prerequisites), MAX_DEPTH + 1) <= depth:
                    continue
                for prerequisite in prerequisites:
                    visit(prerequisite, depth + 1)
                finished[id(prerequisites)] = depth
            for _, lines in self.rules[target]:
                for number, line in lines:
                    found.append(Recipe(target, number, _substitute(line, self.variables)))

        for target in wanted:
            visit(target, 0)
        return found


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line with its number, a line ending in `\\` joined with the next ones (in one
    join: a line continued ten thousand times is not copied ten thousand times)."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        number = index + 1
        parts = [lines[index]]
        while parts[-1].endswith("\\") and index + 1 < len(lines):
            index += 1
            parts[-1] = parts[-1][:-1].rstrip()
            if not parts[-1] and len(parts) > 1:
                parts.pop()  # a line of a lone `\\`: nothing between its neighbours
            parts.append(lines[index].lstrip())
        index += 1
        yield number, " ".join(parts)


def _substitute(line: str, variables: dict[str, str], depth: int = 0) -> str:
    """`$(NAME)` with its value; an unknown one becomes `${NAME}` (a shell variable: unknown);
    make's `$$` is the shell's `$`. Past MAX_LINE_BYTES the references stay unknown."""
    if depth > 4:
        return line
    grown = 0

    def value(match: re.Match[str]) -> str:
        nonlocal grown
        name = match.group(1)
        unknown = "${" + name + "}"
        if name not in variables or len(line) + grown > MAX_LINE_BYTES:
            return unknown
        text = _substitute(variables[name], variables, depth + 1)
        if len(line) + grown + len(text) > MAX_LINE_BYTES:
            return unknown
        grown += len(text)
        return text

    return _REFERENCE.sub(value, line.replace("$$", "\x00")).replace("\x00", "$")
