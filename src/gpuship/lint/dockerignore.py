"""`.dockerignore` matching with Docker's semantics (moby/patternmatcher).

Rules reproduced: blank lines and `#` lines are skipped; each pattern is cleaned like Go's
`filepath.Clean` and a leading `/` is dropped; `*` and `?` never cross `/`; `**` matches any
number of directories; a `!` pattern re-includes; the LAST matching pattern decides; and a
pattern that matches a directory excludes everything below it (`MatchesOrParentMatches`).
BuildKit also prefers `<Dockerfile name>.dockerignore` next to the Dockerfile over the
context's `.dockerignore` (see `ignore_file_for`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    exclusion: bool
    text: str


@dataclass(frozen=True)
class IgnoreRules:
    """The compiled patterns of one ignore file."""

    patterns: tuple[_Pattern, ...] = ()
    origin: str | None = None

    @classmethod
    def parse(cls, text: str, origin: str | None = None) -> IgnoreRules:
        """Compile the lines of an ignore file."""
        patterns: list[_Pattern] = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            exclusion = line.startswith("!")
            if exclusion:
                line = line[1:].strip()
            cleaned = posixpath.normpath(line).lstrip("/") if line else ""
            if not cleaned or cleaned == ".":
                continue
            patterns.append(_Pattern(_compile(cleaned), exclusion, line))
        return cls(tuple(patterns), origin)

    def excluded(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is left out of the build context."""
        parts = path.strip("/").split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        verdict = False
        for pattern in self.patterns:
            if any(pattern.regex.fullmatch(candidate) for candidate in candidates):
                verdict = not pattern.exclusion
        return verdict


def ignore_file_for(dockerfile: Path, context: Path) -> Path | None:
    """The ignore file BuildKit uses for this Dockerfile and context, if any."""
    specific = dockerfile.with_name(dockerfile.name + ".dockerignore")
    if specific.is_file():
        return specific
    general = context / ".dockerignore"
    return general if general.is_file() else None


def _compile(pattern: str) -> re.Pattern[str]:
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
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : close]
                if body.startswith("^"):
                    body = "!" + body[1:]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                index = close
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out))
