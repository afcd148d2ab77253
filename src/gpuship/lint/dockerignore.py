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
    literal: str | None = None  # the path it matches when it has no wildcard


class _Matcher:
    """All patterns at once: which is the last one to match a path (-1: none)."""

    def __init__(self, patterns: tuple[_Pattern, ...]) -> None:
        self._literals: dict[str, int] = {}
        self._set_index: list[int] = []  # position in the RE2 set -> pattern index
        self._set: Any = None  # an RE2 set (the binding ships no type stubs)
        self._last: dict[str, int] = {}  # path -> last pattern matching it or a parent
        re2, options = _re2()
        for index, pattern in enumerate(patterns):
            if pattern.literal is not None:
                self._literals[pattern.literal] = index
            else:
                if self._set is None:
                    self._set = re2.Set.FullMatchSet(options)
                self._set.Add(pattern.regex)
                self._set_index.append(index)
        if self._set is not None:
            self._set.Compile()

    def last(self, path: str) -> int:
        """The index of the last pattern that matches `path` or a directory above it."""
        known = self._last.get(path)
        if known is not None:
            return known
        parent, _, _ = path.rpartition("/")
        found = self._literals.get(path, -1)
        if self._set is not None:
            for matched in self._set.Match(path) or ():
                found = max(found, self._set_index[matched])
        if parent:
            found = max(found, self.last(parent))
        self._last[path] = found
        return found


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
            literal = None if _WILDCARD.search(cleaned) else cleaned
            patterns.append(_Pattern(regex, exclusion, line, literal))
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
