"""The one place subcommands are registered.

Each module listed here defines `NAME`, `HELP`, `add_arguments(parser)` and
`run(args, ctx) -> Report`; heavy imports stay inside `run` so `gpuship --help` is fast.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Protocol, cast

from gpuship.cli.context import Context
from gpuship.report import Report

COMMAND_MODULES: tuple[str, ...] = (
    # `gpuship --help` lists commands in this order: the stages from pull request to release,
    # then reference tools.
    "gpuship.lint.command",
    "gpuship.image.command",
    "gpuship.matrix.matrix_command",
    "gpuship.matrix.lock_command",
    "gpuship.builder.build_command",
    "gpuship.verify.audit_command",
    "gpuship.verify.command",
    "gpuship.verify.fleet_command",
    "gpuship.release.promote_command",
    "gpuship.release.rollback_command",
    "gpuship.release.history_command",
    "gpuship.release.prune_command",
    "gpuship.cli.rules_command",
    "gpuship.cuda.command",
    "gpuship.docs.command",
    "gpuship.cli.schema_command",
)


class Command(Protocol):
    """The shape of a command module."""

    NAME: str
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> Report: ...


def load_commands() -> list[Command]:
    """Import every registered command module, in registration order."""
    return [cast(Command, importlib.import_module(name)) for name in COMMAND_MODULES]
