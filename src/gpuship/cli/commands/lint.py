"""`gpuship lint [PATH ...]`: check Dockerfiles with GPU/ML-aware rules."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.errors import InputError, UsageError
from gpuship.report import Report, Table

NAME = "lint"
HELP = "check Dockerfiles: pinning, weights, caches, toolchains, CUDA mismatches, security"

# Directories never searched when discovering Dockerfiles.
_SKIP_DIRS = frozenset(
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Paths, build args, target and context."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="Dockerfiles or directories (default: every Dockerfile* and *.Dockerfile under .)",
    )
    parser.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override an ARG, as `docker build --build-arg` does (repeatable)",
    )
    parser.add_argument(
        "--target",
        help="lint only the stage `docker build --target` builds (default: every target: each "
        "stage no other stage builds on or copies from)",
    )
    parser.add_argument(
        "--context",
        metavar="DIR",
        help="build context directory (default: the Dockerfile's directory, or the nearest "
        "parent holding its COPY sources)",
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="REF",
        help="also check a built image, read without pulling (registry ref, docker://, "
        "docker-archive:PATH, oci:PATH); alone, only the image is checked (repeatable)",
    )
    parser.add_argument(
        "--platform",
        help="target platform, as `docker build --platform`: sets TARGETARCH & co. for the "
        "Dockerfile (default: this machine's) and picks the image of a multi-platform --image "
        "(default: linux/amd64)",
    )


def is_dockerfile_name(name: str) -> bool:
    """True for names the default patterns select: `Dockerfile*`, `*.Dockerfile`."""
    if name.endswith(".dockerignore"):
        return False
    return name.startswith("Dockerfile") or name.endswith(".Dockerfile")


def discover(root: Path) -> list[Path]:
    """Dockerfiles under `root`, sorted, skipping VCS and virtualenv folders."""
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            path = Path(directory) / name
            # A FIFO or socket named Dockerfile would block the read: regular files only.
            if is_dockerfile_name(name) and path.is_file():
                found.append(path)
    return found


def _build_args(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not name:
            raise UsageError(f"--build-arg {pair!r}: expected NAME=VALUE")
        # `--build-arg NAME` takes the value from the environment, as docker does.
        result[name] = value if sep else os.environ.get(name, "")
    return result


def _display(path: Path) -> str:
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Lint every selected Dockerfile and return one report."""
    from gpuship.lint.engine import lint_file
    from gpuship.lint.rules import RULES
    from gpuship.lint.settings import LintSettings
    from gpuship.report.catalog import apply_overrides, rules_by_id

    # No file, no GPUSHIP_* variable: the defaults, without building (or importing) pydantic.
    settings = ctx.config.lint.settings() if ctx.has_config_input else LintSettings()
    policy = ctx.rule_overrides
    files: list[Path] = []
    # With only --image, no Dockerfile is searched for.
    for raw in args.paths or ([] if args.image else ["."]):
        path = Path(raw)
        if path.is_dir():
            files.extend(discover(path))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            raise InputError(f"{raw}: not a regular file or directory")
        else:
            raise InputError(f"{raw}: no such file or directory")
    if args.paths and not files:
        raise InputError(f"no Dockerfile found in {', '.join(args.paths)}")
    context_dir = Path(args.context) if args.context else None
    if context_dir is not None and not context_dir.is_dir():
        raise InputError(f"--context {args.context}: not a directory")
    build_args = _build_args(args.build_arg)
    report = Report(command=NAME, rules=rules_by_id(RULES))
    summaries = []
    suppressed = 0
    for path in files:
        result = lint_file(
            path,
            display=_display(path),
            context_dir=context_dir,
            build_args=build_args,
            target=args.target,
            config=settings,
            policy=policy,
            platform=args.platform,
            limits=ctx.limits,
        )
        report.findings.extend(result.findings)
        summaries.append(result.summary)
        suppressed += result.suppressed
    images = [_lint_image(ref, args, ctx, files, report) for ref in args.image]
    # The image stage's findings get the configured severities before they are counted.
    apply_overrides(report, policy)
    counts = report.counts()
    report.result = {"files": summaries, "suppressed": suppressed, "counts": counts}
    if images:
        report.result["images"] = images
    report.tables.append(
        Table(
            title="Dockerfiles",
            headers=("file", "stages", "targets linted", "findings", "suppressed"),
            rows=tuple(
                (
                    s["file"],
                    str(len(s["stages"])),
                    ", ".join(s["targets"]) or "-",
                    str(s["findings"]),
                    str(s["suppressed"]),
                )
                for s in summaries
            ),
        )
    )
    checked = f"{len(files)} Dockerfile(s)" + (f", {len(images)} image(s)" if images else "")
    report.headline = (
        f"{checked}: {counts['error']} error(s), "
        f"{counts['warning']} warning(s), {counts['note']} note(s)"
    )
    return report


def _lint_image(
    reference: str, args: argparse.Namespace, ctx: Context, files: list[Path], report: Report
) -> dict[str, object]:
    """Merge the image stage's findings for `reference`; map them to the Dockerfile if one."""
    from gpuship.image.run import inspect_and_judge

    dockerfile = files[0] if len(files) == 1 else None
    judgement = inspect_and_judge(
        reference,
        ctx.config.inspect,
        insecure=ctx.config.registries.insecure,
        environ=ctx.environ,
        platform=args.platform,
        dockerfile=dockerfile,
        limits=ctx.limits,
    )
    report.findings.extend(judgement.findings)
    report.rules = {**report.rules, **judgement.rules}
    return judgement.result
