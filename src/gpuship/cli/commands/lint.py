"""`gpuship lint [PATH ...]`: check Dockerfiles with GPU/ML-aware rules."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.errors import UsageError
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.image.run import ImageCheck

NAME = "lint"
HELP = "check Dockerfiles: pinning, weights, caches, toolchains, CUDA mismatches, security"


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
        "Dockerfile and picks the image of a multi-platform --image (default: this machine's, "
        "e.g. linux/arm64 on aarch64)",
    )


def _build_args(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not name:
            raise UsageError(f"--build-arg {pair!r}: expected NAME=VALUE")
        # `--build-arg NAME` takes the value from the environment, as docker does.
        result[name] = value if sep else os.environ.get(name, "")
    return result


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Lint every selected Dockerfile (and --image) and return one report."""
    from gpuship.lint.run import LintRequest, run_lint
    from gpuship.lint.settings import LintSettings

    # No file, no GPUSHIP_* variable: the defaults, without building (or importing) pydantic.
    settings = LintSettings()
    if ctx.has_config_input:
        from gpuship.lint.config import LintConfig

        settings = ctx.config.section(LintConfig).settings()
    request = LintRequest(
        paths=tuple(args.paths),
        images=tuple(args.image),
        build_args=_build_args(args.build_arg),
        target=args.target,
        platform=args.platform,
        context=Path(args.context) if args.context else None,
        settings=settings,
        overrides=ctx.rule_overrides,
        limits=ctx.limits,
        check_image=_image_check(ctx, args.platform) if args.image else None,
    )
    return run_lint(NAME, request)


def _image_check(ctx: Context, platform: str | None) -> ImageCheck:
    """The image stage's checks of each --image, as the `inspect:` config sets them."""
    from gpuship.image.config import ImageStageConfig
    from gpuship.image.run import image_check

    return image_check(ctx.config.section(ImageStageConfig), ctx.registry_access(), platform)


def result_type() -> object:
    """Every Dockerfile linted, with the image stage's result for each --image."""
    from gpuship.image_result import ImageResult
    from gpuship.lint.result import LintResult

    return LintResult[ImageResult]
