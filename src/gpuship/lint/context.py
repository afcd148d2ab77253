"""What the build context holds, as the builder would send it (after `.dockerignore`)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from gpuship.lint.dockerignore import IgnoreRules, ignore_file_for

# Walking stops after this many entries: a context that large is a problem of its own,
# and linting must stay fast on a developer's home directory given by mistake.
MAX_CONTEXT_ENTRIES = 200_000
# Bytes of a context text file (requirements, scripts) we read.
MAX_TEXT_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class ContextFile:
    """A file the builder would send: its context-relative path and size in bytes."""

    path: str
    size: int


class BuildContext:
    """The files of a build context, filtered by the ignore file BuildKit would use."""

    def __init__(self, root: Path, dockerfile: Path) -> None:
        self.root = root
        ignore = ignore_file_for(dockerfile, root) if root.is_dir() else None
        if ignore is not None:
            text = ignore.read_text(encoding="utf-8", errors="replace")
            self.ignore = IgnoreRules.parse(text, str(ignore))
        else:
            self.ignore = IgnoreRules()

    @property
    def exists(self) -> bool:
        return self.root.is_dir()

    def _path(self, relative: str) -> Path | None:
        normal = os.path.normpath(relative.lstrip("/")).replace(os.sep, "/")
        if normal.startswith("../") or normal == "..":
            return None
        return self.root / normal if normal != "." else self.root

    def sent(self, relative: str) -> bool:
        """True when `relative` exists in the context and is not ignored."""
        path = self._path(relative)
        if path is None or not path.exists():
            return False
        normal = os.path.normpath(relative).replace(os.sep, "/")
        return normal == "." or not self.ignore.excluded(normal)

    def is_dir(self, relative: str) -> bool:
        path = self._path(relative)
        return path is not None and path.is_dir()

    def read_text(self, relative: str) -> str | None:
        """The text of a context file, or None when it is absent, ignored or not text."""
        path = self._path(relative)
        if path is None or not path.is_file() or not self.sent(relative):
            return None
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_TEXT_BYTES)
        except OSError:
            return None
        if b"\x00" in data[:4096]:
            return None
        return data.decode("utf-8", errors="replace")

    def match(self, pattern: str) -> list[str]:
        """Context paths a COPY source (possibly with wildcards) selects."""
        normal = os.path.normpath(pattern.lstrip("/")).replace(os.sep, "/")
        if not any(c in normal for c in "*?["):
            return [normal] if self.sent(normal) else []
        directory = os.path.dirname(normal)
        base = self._path(directory or ".")
        if base is None or not base.is_dir():
            return []
        found = []
        for entry in sorted(os.listdir(base)):
            candidate = f"{directory}/{entry}" if directory else entry
            if fnmatch.fnmatchcase(candidate, normal) and self.sent(candidate):
                found.append(candidate)
        return found

    def files_under(self, relative: str = ".") -> Iterator[ContextFile]:
        """Every file sent from `relative` down (a file yields itself)."""
        normal = os.path.normpath(relative.lstrip("/")).replace(os.sep, "/")
        for item in self._all_files:
            if normal in (".", item.path) or item.path.startswith(normal + "/"):
                yield item

    @cached_property
    def _all_files(self) -> tuple[ContextFile, ...]:
        if not self.exists:
            return ()
        files: list[ContextFile] = []
        seen = 0
        for directory, subdirs, names in os.walk(self.root):
            rel_dir = os.path.relpath(directory, self.root).replace(os.sep, "/")
            prefix = "" if rel_dir == "." else rel_dir + "/"
            # An excluded directory may still hold re-included files (`!`), so only prune
            # when no exclusion pattern exists.
            if not any(p.exclusion for p in self.ignore.patterns):
                subdirs[:] = [d for d in subdirs if not self.ignore.excluded(prefix + d)]
            for name in names:
                seen += 1
                relative = prefix + name
                if self.ignore.excluded(relative):
                    continue
                try:
                    size = os.lstat(os.path.join(directory, name)).st_size
                except OSError:
                    continue
                files.append(ContextFile(relative, size))
            seen += len(subdirs)
            if seen > MAX_CONTEXT_ENTRIES:
                break
        return tuple(files)


def guess_context(dockerfile: Path, sources: list[str], levels: int = 3) -> Path:
    """The build context a Dockerfile most likely uses when none is given.

    Many repositories keep `docker/Dockerfile` and build with the repository root as context.
    Of the Dockerfile's directory and up to `levels` parents, the one holding the most of the
    Dockerfile's literal COPY/ADD sources wins; ties go to the nearest directory.
    """
    directory = dockerfile.resolve().parent
    candidates = [directory, *list(directory.parents)[:levels]]
    best, best_score = directory, 0
    for candidate in candidates:
        score = sum(1 for source in sources if _exists(candidate, source))
        if score > best_score:
            best, best_score = candidate, score
    return best


def _exists(root: Path, source: str) -> bool:
    relative = source.lstrip("/")
    if any(c in relative for c in "*?["):
        return any(root.glob(relative))
    return (root / relative).exists()
