"""What the build context holds, as the builder would send it (after `.dockerignore`)."""

from __future__ import annotations

import bisect
import fnmatch
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from gpuship.documents import read_file
from gpuship.errors import InputError, LimitExceeded
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.lint.dockerignore import IgnoreProblem, IgnoreRules, ignore_file_for

# Most characters of context files kept once read (their text, or what lint parsed of them):
# past it a file is read again when another rule asks, so memory stays bounded.
CACHED_TEXT_MAX_CHARS = 64 * 1024 * 1024


@dataclass(frozen=True)
class ContextFile:
    """A file the builder would send: its context-relative path and size in bytes."""

    path: str
    size: int


@dataclass(frozen=True)
class Unread:
    """A context file (or the context walk) that a limit kept lint from reading."""

    path: str
    why: str


class BuildContext:
    """The files of a build context, filtered by the ignore file BuildKit would use.

    Files are read within `limits`: only regular files inside the context, no larger than
    `context-file-max-bytes` (scripts a RUN runs: `script-max-bytes`); what a limit kept
    unread is listed in `unread`, so lint can say what it did not check.
    """

    def __init__(self, root: Path, dockerfile: Path, limits: Limits = DEFAULT_LIMITS) -> None:
        self.root = root
        self.limits = limits
        self.unread: list[Unread] = []
        # Each file's text, read once: several rules read the same requirements file (an
        # 8,000-line Dockerfile's 8,000 files were read four times each). With it, what a limit
        # kept unread, recorded again at each read as before.
        self._texts: dict[tuple[str, str], tuple[str | None, Unread | None]] = {}
        self._cached_chars = 0
        # What `sent` and `is_dir` found of each path, asked by many rules.
        self._sent: dict[str, bool] = {}
        self._dirs: dict[str, bool] = {}
        ignore = ignore_file_for(dockerfile, root) if root.is_dir() else None
        self.ignore = self._read_ignore(ignore) if ignore is not None else IgnoreRules()

    def _read_ignore(self, path: Path) -> IgnoreRules:
        # Like any file that leaves the context (read_text), a link out is not read: the
        # builder sends the link, not the file, and its lines would be quoted in findings.
        home = self.root if path.parent == self.root else path.parent
        if not path.resolve().is_relative_to(home.resolve()):
            reason = f"{path} is a symbolic link out of the build context: not read"
            return IgnoreRules(origin=str(path), problems=(IgnoreProblem(1, reason, True),))
        try:
            data = read_file(path, "ignore file", self.limits, "context_file_max_bytes")
        except InputError as error:
            # Docker reads it whole; without it the context cannot be known: say so.
            return IgnoreRules(origin=str(path), problems=(IgnoreProblem(1, str(error), True),))
        text = data.decode("utf-8", errors="replace")
        return IgnoreRules.parse(text, str(path), self.limits.dockerignore_max_patterns)

    @cached_property
    def exists(self) -> bool:
        return self.root.is_dir()

    @cached_property
    def _real_root(self) -> Path:
        return self.root.resolve()

    def _path(self, relative: str) -> Path | None:
        normal = context_relative(relative)
        return self.root / normal if normal != "." else self.root

    def sent(self, relative: str) -> bool:
        """True when `relative` exists in the context and is not ignored."""
        if relative not in self._sent:
            self._sent[relative] = self._sends(relative)
        return self._sent[relative]

    def _sends(self, relative: str) -> bool:
        path = self._path(relative)
        if path is None or not path.exists():
            return False
        normal = context_relative(relative)
        return normal == "." or not self.ignore.excluded(normal)

    def is_dir(self, relative: str) -> bool:
        if relative not in self._dirs:
            path = self._path(relative)
            self._dirs[relative] = path is not None and path.is_dir()
        return self._dirs[relative]

    def read_text(self, relative: str, size_limit: str = "context_file_max_bytes") -> str | None:
        """The text of a context file, or None when it is absent, ignored, not text, a link
        out of the context, or larger than the limit named `size_limit` (then in `unread`).
        Read once: the context is what the builder sends, a snapshot."""
        key = (relative, size_limit)
        text, unread = self._texts.get(key) or self._read_text(relative, size_limit)
        if key not in self._texts and self._cached_chars + len(text or "") <= CACHED_TEXT_MAX_CHARS:
            self._cached_chars += len(text or "")
            self._texts[key] = (text, unread)
        if unread is not None:
            self.unread.append(unread)
        return text

    def _read_text(self, relative: str, size_limit: str) -> tuple[str | None, Unread | None]:
        path = self._path(relative)
        if path is None or not path.is_file() or not self.sent(relative):
            return None, None
        if not path.resolve().is_relative_to(self._real_root):
            return None, None  # the builder sends the link, not a file outside the context
        try:
            data = read_file(path, "context file", self.limits, size_limit)
        except LimitExceeded as error:
            return None, Unread(relative, str(error))
        except InputError:
            return None, None
        if b"\x00" in data[:4096]:
            return None, None
        return data.decode("utf-8", errors="replace"), None

    def match(self, pattern: str) -> list[str]:
        """Context paths a COPY source (possibly with wildcards) selects."""
        normal = context_relative(pattern)
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
        """Every file sent from `relative` down (a file yields itself), in the walk's order.
        Found by bisection in the paths sorted once: a COPY of one directory costs the files
        it holds, not every file of the context (300 COPYs of a 60,000-file context)."""
        normal = context_relative(relative)
        if normal == ".":
            yield from self._all_files
            return
        paths, walked = self._sorted
        # Below `normal`: the paths from `normal/` up to `normal0` ("0" follows "/").
        start = bisect.bisect_left(paths, normal + "/")
        found = walked[start : bisect.bisect_left(paths, normal + "0", start)]
        at = bisect.bisect_left(paths, normal)
        if at < len(paths) and paths[at] == normal:
            found.append(walked[at])
        for index in sorted(found):
            yield self._all_files[index]

    @cached_property
    def _sorted(self) -> tuple[list[str], list[int]]:
        """The paths of `_all_files` sorted, and the place of each in the walk's order."""
        order = sorted(range(len(self._all_files)), key=lambda i: self._all_files[i].path)
        return [self._all_files[i].path for i in order], order

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
            if seen > self.limits.context_max_entries:
                self.unread.append(
                    Unread(
                        ".",
                        f"the build context has more than {self.limits.context_max_entries} "
                        f"entries; the rest was not walked "
                        f"(limit {Limits.key('context_max_entries')})",
                    )
                )
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


def context_relative(source: str) -> str:
    """A COPY source as a path in the context, the way BuildKit resolves it: from the context's
    root, where `..` stops (`COPY .. .` is the whole context, `../x` is `x`); "." for the root."""
    return posixpath.normpath("/" + source.replace(os.sep, "/")).lstrip("/") or "."


def _exists(root: Path, source: str) -> bool:
    relative = source.lstrip("/")
    if any(c in relative for c in "*?["):
        return any(root.glob(relative))
    return (root / relative).exists()
