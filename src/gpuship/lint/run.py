"""`gpuship lint` as a stage: find the Dockerfiles, lint each, add an image's checks, report.

Takes plain values (paths, build args, settings, the rule overrides) and, for `--image`,
a function that checks an image: the command gives the image stage's, so lint needs no
other stage's insides.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from gpuship.errors import InputError
from gpuship.limits import Limits
from gpuship.lint.engine import lint_file
from gpuship.lint.result import LintResult
from gpuship.lint.rules import RULES
from gpuship.lint.settings import LintSettings
from gpuship.report import Finding, Report, Rule, Table
from gpuship.report.catalog import Overrides, apply_overrides, rules_by_id
from gpuship.report.result import Counts

ImageT = TypeVar("ImageT")

# The image stage's checks of one image (REF, the Dockerfile its findings point into):
# findings, their rules, and the image result.
ImageCheck = Callable[[str, Path | None], tuple[Sequence[Finding], Mapping[str, Rule], ImageT]]

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

    paths: tuple[str, ...]  # files or directories; none: `.` (unless images are given)
    images: tuple[str, ...]
    build_args: Mapping[str, str]
    target: str | None  # None: every target the Dockerfile defines
    platform: str | None  # sets TARGETARCH & co. (None: this machine's)
    context: Path | None
    settings: LintSettings
    overrides: Overrides
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


def select_files(paths: Sequence[str], with_images: bool) -> list[Path]:
    """The Dockerfiles the paths name; with only images, none are searched for."""
    files: list[Path] = []
    for raw in paths or ([] if with_images else ["."]):
        path = Path(raw)
        if path.is_dir():
            files.extend(discover(path))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            raise InputError(f"{raw}: not a regular file or directory")
        else:
            raise InputError(f"{raw}: no such file or directory")
    if paths and not files:
        raise InputError(f"no Dockerfile found in {', '.join(paths)}")
    return files


def lint_report(command: str, request: LintRequest[ImageT]) -> Report:
    """Lint every selected Dockerfile (and check every image) into one report."""
    files = select_files(request.paths, bool(request.images))
    if request.context is not None and not request.context.is_dir():
        raise InputError(f"--context {request.context}: not a directory")
    report = Report(command=command, rules=rules_by_id(RULES))
    summaries = []
    suppressed = 0
    for path in files:
        linted = lint_file(
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
        report.findings.extend(linted.findings)
        summaries.append(linted.summary)
        suppressed += linted.suppressed
    images = []
    if request.check_image is not None:
        dockerfile = files[0] if len(files) == 1 else None
        for reference in request.images:
            findings, catalog, image = request.check_image(reference, dockerfile)
            report.findings.extend(findings)
            report.rules = {**report.rules, **catalog}
            images.append(image)
    # The image stage's findings get the configured severities before they are counted.
    apply_overrides(report, request.overrides)
    counts = Counts(**report.counts())
    report.result = LintResult(tuple(summaries), suppressed, counts, tuple(images) or None)
    report.tables.append(
        Table(
            title="Dockerfiles",
            headers=("file", "stages", "targets linted", "findings", "suppressed"),
            rows=tuple(
                (
                    s.file,
                    str(len(s.stages)),
                    ", ".join(s.targets) or "-",
                    str(s.findings),
                    str(s.suppressed),
                )
                for s in summaries
            ),
        )
    )
    checked = f"{len(files)} Dockerfile(s)" + (f", {len(images)} image(s)" if images else "")
    report.headline = (
        f"{checked}: {counts.error} error(s), {counts.warning} warning(s), {counts.note} note(s)"
    )
    return report


def _display(path: Path) -> str:
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
