"""`gpuship lint` as a stage: find the Dockerfiles, lint each, add an image's checks; the
Report is made in `lint/report.py`.

Takes plain values (paths, build args, settings, the rule overrides) and, for `--image`,
a function that checks an image: the command gives the image stage's, so lint needs no
other stage's insides.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Generic

from gpuship.errors import InputError
from gpuship.limits import Limits
from gpuship.lint.engine import lint_file
from gpuship.lint.report import ImageChecked, ImageT, lint_report
from gpuship.lint.settings import LintSettings
from gpuship.report import Report
from gpuship.report.catalog import Overrides

# The image stage's checks of one image (REF, the Dockerfile its findings point into).
ImageCheck = Callable[[str, Path | None], ImageChecked[ImageT]]

# Directories never searched when discovering Dockerfiles.
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
    }
)


@dataclass(frozen=True)
class LintRequest(Generic[ImageT]):
    """What to lint, and how."""

    paths: tuple[str, ...]  # files, directories or globs; none: `.` (unless images are given)
    images: tuple[str, ...]
    build_args: Mapping[str, str]
    target: str | None  # None: every target the Dockerfile defines
    platform: str | None  # sets TARGETARCH & co. (None: this machine's)
    context: Path | None
    settings: LintSettings
    overrides: Overrides  # the engine checks no rule they turn off
    limits: Limits
    check_image: ImageCheck[ImageT] | None = None


def is_dockerfile_name(name: str) -> bool:
    """True for names the default patterns select: `Dockerfile*`, `*.Dockerfile`."""
    if name.endswith(".dockerignore"):
        return False
    return name.startswith("Dockerfile") or name.endswith(".Dockerfile")


def discover(root: Path) -> list[Path]:
    """Dockerfiles under `root`, sorted, skipping VCS and virtualenv folders."""
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(directory) / name
            # A FIFO or socket named Dockerfile would block the read: regular files only.
            if is_dockerfile_name(name) and path.is_file():
                found.append(path)
    return found


def is_pattern(path: str) -> bool:
    """A glob (`**/Dockerfile*`) rather than the name of a file that exists."""
    return any(char in path for char in "*?[") and not Path(path).exists()


def expand(pattern: str) -> list[Path]:
    """Files a glob matches, in path order: `**` spans any number of directories and wildcards match
    leading dots too (bash's globstar and dotglob, what the lint action used to expand),
    skipping the directories `discover` skips and `.dockerignore` files."""
    parts = PurePosixPath(pattern).parts
    fixed = 0
    while fixed < len(parts) - 1 and not any(char in parts[fixed] for char in "*?["):
        fixed += 1
    root, rest = Path(*parts[:fixed]) if fixed else Path("."), parts[fixed:]
    # Without `**`, no match lies deeper than the pattern has parts: do not walk further.
    depth = None if "**" in rest else len(rest) - 1
    found = []
    for directory, subdirs, names in os.walk(root):
        where = Path(directory).relative_to(root).parts
        keep = depth is None or len(where) < depth
        subdirs[:] = sorted(d for d in subdirs if keep and d not in SKIP_DIRS)
        found += [
            Path(directory) / name
            for name in sorted(names)
            if not name.endswith(".dockerignore")
            and _matches(rest, (*where, name))
            # A FIFO or socket named Dockerfile would block the read: regular files only.
            and (Path(directory) / name).is_file()
        ]
    return sorted(found)


def _matches(pattern: Sequence[str], parts: Sequence[str]) -> bool:
    if not pattern:
        return not parts
    head, tail = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(tail, parts[skip:]) for skip in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _matches(tail, parts[1:])


def select_files(paths: Sequence[str], with_images: bool) -> tuple[list[Path], list[str]]:
    """The Dockerfiles the paths name, once each, and the globs that matched nothing. With
    only images, none are searched for. A missing file is an error (a typo); a glob that
    matches nothing is not (the lint action's default globs on a repository without any)."""
    files: list[Path] = []
    unmatched = []
    for raw in paths or ([] if with_images else ["."]):
        path = Path(raw)
        if path.is_dir():
            files.extend(discover(path))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            raise InputError(f"{raw}: not a regular file or directory")
        elif is_pattern(raw):
            matched = expand(raw)
            files.extend(matched)
            unmatched += [] if matched else [raw]
        else:
            raise InputError(f"{raw}: no such file or directory")
    if not files and any(not is_pattern(raw) for raw in paths):
        raise InputError(f"no Dockerfile found in {', '.join(paths)}")
    return list(dict.fromkeys(files)), unmatched


def run_lint(command: str, request: LintRequest[ImageT]) -> Report:
    """Lint every selected Dockerfile (and check every image) into one report."""
    files, unmatched = select_files(request.paths, bool(request.images))
    if request.context is not None and not request.context.is_dir():
        raise InputError(f"--context {request.context}: not a directory")
    linted = [
        lint_file(
            path,
            display=_display(path),
            context_dir=request.context,
            build_args=request.build_args,
            target=request.target,
            config=request.settings,
            policy=request.overrides,
            platform=request.platform,
            limits=request.limits,
        )
        for path in files
    ]
    images: list[ImageChecked[ImageT]] = []
    if request.check_image is not None:
        dockerfile = files[0] if len(files) == 1 else None
        images = [request.check_image(reference, dockerfile) for reference in request.images]
    return lint_report(command, linted, images, unmatched)


def _display(path: Path) -> str:
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
