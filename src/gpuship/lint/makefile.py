"""The recipes `make TARGET` runs, read from a Makefile of the build context.

Enough of GNU make to see what a `RUN make models` does: rules `target ...: prerequisites`,
their tab-indented recipe lines (with `\\` continuations), and simple variable assignments
(`=`, `:=`, `::=`, `?=`) substituted into recipes as `$(NAME)` / `${NAME}`. Pattern rules,
functions, conditionals and includes are not evaluated: a recipe that uses them is taken as
written, with what it cannot resolve left unknown.
"""

from __future__ import annotations

import re
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
    rules, order, variables = _parse(text)
    wanted = targets or order[:1]
    found: list[Recipe] = []
    done: set[str] = set()

    def visit(target: str, depth: int) -> None:
        if target in done or depth > MAX_DEPTH or target not in rules:
            return
        done.add(target)
        prerequisites, lines = rules[target]
        for prerequisite in prerequisites:
            visit(prerequisite, depth + 1)
        for number, line in lines:
            found.append(Recipe(target, number, _substitute(line, variables)))

    for target in wanted:
        visit(target, 0)
    return found


def _parse(
    text: str,
) -> tuple[dict[str, tuple[list[str], list[tuple[int, str]]]], list[str], dict[str, str]]:
    rules: dict[str, tuple[list[str], list[tuple[int, str]]]] = {}
    order: list[str] = []
    variables: dict[str, str] = {}
    current: list[str] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        number = index + 1
        line = lines[index]
        while line.endswith("\\") and index + 1 < len(lines):  # a continued line
            index += 1
            line = line[:-1].rstrip() + " " + lines[index].lstrip()
        index += 1
        if line.startswith("\t"):
            body = line[1:].lstrip("@-+ \t")
            for target in current:
                rules[target][1].append((number, body))
            continue
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped.strip():
            continue
        assignment = _ASSIGNMENT.match(stripped)
        if assignment is not None:
            name, operator, value = assignment.groups()
            if operator != "?=" or name not in variables:
                variables[name] = value.strip()
            current = []
            continue
        rule = _RULE.match(stripped)
        if rule is None:
            current = []
            continue
        names = [t for t in rule.group(1).split() if t and "%" not in t]
        prerequisites = [p for p in rule.group(2).split() if p and "%" not in p]
        current = []
        for name in names:
            if name.startswith("."):
                continue  # .PHONY and other special targets
            entry = rules.setdefault(name, ([], []))
            entry[0].extend(prerequisites)
            if rule.group(3):
                entry[1].append((number, rule.group(3).strip()))
            current.append(name)
            if name not in order:
                order.append(name)
    return rules, order, variables


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
