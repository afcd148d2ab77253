"""`.dockerignore` matching with Docker's semantics (moby/patternmatcher).

Rules reproduced: blank lines and `#` lines are skipped; each pattern is cleaned like Go's
`filepath.Clean` and a leading `/` is dropped; `*` and `?` never cross `/`; `**` matches any
number of directories; a `!` pattern re-includes; the LAST matching pattern decides; and a
pattern that matches a directory excludes everything below it (`MatchesOrParentMatches`).
BuildKit also prefers `<Dockerfile name>.dockerignore` next to the Dockerfile over the
context's `.dockerignore` (see `ignore_file_for`).

Patterns become RE2 regular expressions, as moby/patternmatcher turns them into Go `regexp`
ones (the same RE2 syntax): matching takes time linear in the path whatever the pattern (a
backtracking engine takes exponential time on `*a*a*a*a*a*b`), and a pattern Go's regexp
refuses (`[z-a]`) is refused here with the same reason. Docker then fails every build of the
context ("syntax error in pattern"); here that line is a problem to report, and the other
lines still apply.

Docker tries each pattern on each path in turn (patterns x paths regex runs: 10,000 patterns
over 3,000 files took minutes here). Here the patterns are compiled once into one RE2 set (a
lazily built DFA that tries them all in one pass over the path) and a dict of the literal
ones, and each directory's answer is kept, so a file costs one pass over its own name. The
answer is the same: the last pattern matching the path or one of its parents decides, which
is the highest index either finds (tests/unit/lint/test_dockerignore_matcher.py checks it
against the one-pattern-at-a-time loop).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuship.limits import DEFAULT_LIMITS, Limits

# What makes a cleaned pattern more than the one path it names.
_WILDCARD = re.compile(r"[*?\[\\]")


@dataclass(frozen=True)
class _Pattern:
    regex: str  # the RE2 expression of the cleaned pattern
    exclusion: bool
    text: str
    cleaned: str  # as Go's filepath.Clean leaves it, without a leading /

    @property
    def literal(self) -> str | None:
        """The one path the pattern matches when it has no wildcard."""
        return None if _WILDCARD.search(self.cleaned) else self.cleaned


class _Group:
    """Patterns tried together as one RE2 set: the last of them to match a text (-1: none)."""

    def __init__(self) -> None:
        self._indexes: list[int] = []  # position in the set -> pattern index
        self._set: Any = None  # an RE2 set (the binding ships no type stubs)

    def add(self, index: int, regex: str) -> None:
        if self._set is None:
            re2, options = _re2()
            self._set = re2.Set.FullMatchSet(options)
        self._set.Add(regex)
        self._indexes.append(index)

    def compile(self) -> None:
        if self._set is not None:
            self._set.Compile()

    def last(self, text: str) -> int:
        if self._set is None:
            return -1
        return max((self._indexes[i] for i in self._set.Match(text) or ()), default=-1)


class _Matcher:
    """All patterns at once: which is the last one to match a path (-1: none).

    A pattern without a wildcard is a dict entry. One with a literal (`*f12?.py` has `f12`
    and `.py`) can only match a path with a component holding its longest literal, so
    patterns are grouped by that literal and a path tries only the groups whose literal one
    of its components holds (dict lookups of each component's substrings, kept per
    component). Patterns with no literal (`*`, `?*`, `[ab]*`) form one set. A set's DFA step
    costs in proportion to the patterns still alive in it: 10,000 patterns sharing a start
    with the file names (`**/*f<i>?x` over files `f<n>x.py`) in one set cost 17 s for 3,000
    files, and under a second grouped.
    """

    def __init__(self, patterns: tuple[_Pattern, ...]) -> None:
        self._literals: dict[str, int] = {}
        self._by_literal: dict[str, _Group] = {}
        self._rest = _Group()
        self._last: dict[str, int] = {}  # path -> last pattern matching it or a parent
        self._in_component: dict[str, tuple[_Group, ...]] = {}
        for index, pattern in enumerate(patterns):
            if pattern.literal is not None:
                self._literals[pattern.literal] = index
                continue
            literal = _longest_literal(pattern.cleaned)
            group = self._by_literal.setdefault(literal, _Group()) if literal else self._rest
            group.add(index, pattern.regex)
        for group in (self._rest, *self._by_literal.values()):
            group.compile()
        self._lengths = sorted({len(literal) for literal in self._by_literal})

    def last(self, path: str) -> int:
        """The index of the last pattern that matches `path` or a directory above it."""
        known = self._last.get(path)
        if known is not None:
            return known
        parent, _, _ = path.rpartition("/")
        found = max(self._literals.get(path, -1), self._rest.last(path))
        groups = {group for part in path.split("/") for group in self._groups_in(part)}
        for group in groups:
            found = max(found, group.last(path))
        if parent:
            found = max(found, self.last(parent))
        self._last[path] = found
        return found

    def _groups_in(self, component: str) -> tuple[_Group, ...]:
        """The groups whose literal is a substring of `component`."""
        known = self._in_component.get(component)
        if known is None:
            found = []
            for length in self._lengths:
                for start in range(len(component) - length + 1):
                    group = self._by_literal.get(component[start : start + length])
                    if group is not None:
                        found.append(group)
            known = self._in_component[component] = tuple(found)
        return known


def _longest_literal(pattern: str) -> str:
    """The longest run of plain characters, without `/`, that every match of `pattern`
    holds within one path component ("" when there is none); read off _translate, so a
    class or an escape is taken exactly as the regex takes it."""
    marked = _translate(pattern, lambda char: "\0" + char)
    runs, run = [], ""
    index = 0
    while index < len(marked):
        if marked[index] == "\0" and marked[index + 1] != "/":
            run += marked[index + 1]
            index += 2
            continue
        runs.append(run)
        run = ""
        if marked[index] == "[":
            index = _class_end(marked, index)
        else:
            index += 2 if marked[index] == "\0" else 1
    runs.append(run)
    return max(runs, key=len)


def _class_end(marked: str, start: int) -> int:
    r"""Where the regex's character class opened at `start` ends, as RE2 (and Go's regexp,
    moby's) reads it: a `]` first in the class is a member, and so is an escaped one (`\]`),
    so the globs `[]` and `[\]` open a class that swallows the characters after it; a literal
    marked inside is a member, not a run."""
    index = start + 1
    index += marked.startswith("^", index)
    index += marked.startswith("]", index)
    while index < len(marked) and marked[index] != "]":
        index += 2 if marked[index] in "\0\\" else 1
    return index + 1


@dataclass(frozen=True)
class IgnoreProblem:
    """A line of the ignore file that Docker refuses, or that passes a gpuship limit."""

    line: int
    message: str
    limit: bool = False  # True: gpuship's limit, not Docker's error


@dataclass(frozen=True)
class IgnoreRules:
    """The compiled patterns of one ignore file, and its lines that could not be used."""

    patterns: tuple[_Pattern, ...] = ()
    origin: str | None = None
    problems: tuple[IgnoreProblem, ...] = ()
    _matcher: _Matcher | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(
        cls,
        text: str,
        origin: str | None = None,
        max_patterns: int = DEFAULT_LIMITS.dockerignore_max_patterns,
    ) -> IgnoreRules:
        """Compile the lines of an ignore file; a bad line is a problem, never an exception."""
        patterns: list[_Pattern] = []
        problems: list[IgnoreProblem] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            exclusion = line.startswith("!")
            if exclusion:
                line = line[1:].strip()
                if not line:
                    problems.append(IgnoreProblem(number, "illegal exclusion pattern '!'"))
                    continue
            cleaned = posixpath.normpath(line).lstrip("/") if line else ""
            if not cleaned or cleaned == ".":
                continue
            if len(patterns) >= max_patterns:
                problems.append(
                    IgnoreProblem(
                        number,
                        f"more than {max_patterns} patterns: this one and the rest are not "
                        f"applied (limit {Limits.key('dockerignore_max_patterns')})",
                        limit=True,
                    )
                )
                break
            re2, options = _re2()
            regex = _translate(cleaned)
            try:
                re2.compile(regex, options)
            except re2.error as error:
                reason = error.args[0] if error.args else error
                if isinstance(reason, bytes):
                    reason = reason.decode("utf-8", "replace")
                problems.append(IgnoreProblem(number, f"invalid pattern {line!r}: {reason}"))
                continue
            patterns.append(_Pattern(regex, exclusion, line, cleaned))
        matcher = _Matcher(tuple(patterns)) if patterns else None
        return cls(tuple(patterns), origin, tuple(problems), matcher)

    def excluded(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is left out of the build context."""
        if self._matcher is None:
            return False
        last = self._matcher.last(path.strip("/"))
        return last >= 0 and not self.patterns[last].exclusion


@functools.cache
def _re2() -> tuple[Any, Any]:
    """The RE2 module and its options, imported only when a context has an ignore file
    (about 30 ms that lint of a context without one does not pay)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    # The set of 10,000 patterns and its DFA states outgrow RE2's default 8 MiB budget.
    options.max_mem = 256 * 1024 * 1024
    return re2, options


def ignore_file_for(dockerfile: Path, context: Path) -> Path | None:
    """The ignore file BuildKit uses for this Dockerfile and context, if any."""
    specific = dockerfile.with_name(dockerfile.name + ".dockerignore")
    if specific.is_file():
        return specific
    general = context / ".dockerignore"
    return general if general.is_file() else None


def _literal(char: str) -> str:
    # Everything but letters, digits and `/` as a code point escape, which RE2 reads the same
    # way in and out of a character class.
    return char if char.isalnum() or char in "/_" else f"\\x{{{ord(char):x}}}"


def _translate(pattern: str, literal: Callable[[str], str] = _literal) -> str:
    """The regular expression of a cleaned pattern; `literal` escapes a plain character."""
    out: list[str] = []
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "*":
            if pattern.startswith("**", index):
                index += 2
                if pattern.startswith("/", index):
                    index += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = pattern.find("]", index + 1)
            if close < 0:
                out.append(literal(char))
            else:
                body = pattern[index + 1 : close]
                if body.startswith("^"):
                    body = "!" + body[1:]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                index = close
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(literal(pattern[index]))
        else:
            out.append(literal(char))
        index += 1
    return "".join(out)
