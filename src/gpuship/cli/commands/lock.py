"""`gpuship lock`: pin every base image tag of the matrix to its digest in `gpuship.lock`.

`--check` writes nothing and fails (exit 1) when the file is missing, names a base no cell
uses, lacks one a cell uses, or pins a digest the tag no longer points to.

The shape every command module has (cli/registry.py): arguments, one call into a stage with
plain values, and the type of its result.
"""

from __future__ import annotations

import argparse

from gpuship.cli.context import Context
from gpuship.report import Report

NAME = "lock"
HELP = "resolve base image tags to digests into gpuship.lock (--check: fail when stale)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `gpuship lock`."""
    parser.add_argument("--check", action="store_true", help="fail when gpuship.lock is stale")
    parser.add_argument("--lock", metavar="PATH", help="lock file (default: gpuship.lock)")


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Resolve the bases through the registry API and write or check the lock file."""
    from gpuship.matrix.config import ImageConfig
    from gpuship.matrix.lock import lock_bases
    from gpuship.matrix.project import load_project

    project = load_project(
        ctx.config_path, ctx.config.section(list[ImageConfig]), args.lock, ctx.limits
    )
    with ctx.registry_client() as client:
        return lock_bases(NAME, project, check=args.check, client=client)


def result_type() -> object:
    """The lock file, its bases' digests now, and what changed."""
    from gpuship.matrix.result import LockResult

    return LockResult
