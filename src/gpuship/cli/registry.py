"""The one place subcommands are registered.

Each module listed here defines `NAME`, `HELP`, `add_arguments(parser)`,
`run(args, ctx) -> Report` and `result_type()`, the type of its `Report.result` (from which
`gpuship schema --result NAME` publishes the JSON Schema of its `--format json` document).
Heavy imports stay inside `run` and `result_type`. A command line names one command, so only
that module is imported (`gpuship lint` starts without the others); `gpuship --help` imports
them all for their help lines. A command module
reads like this (see `cli/commands/lock.py`):

    NAME = "lock"
    HELP = "resolve base image tags to digests into gpuship.lock (--check: fail when stale)"

    def add_arguments(parser): ...          # argparse only

    def run(args, ctx) -> Report:           # one call into a stage, with plain values
        from gpuship.matrix.lock import lock_bases
        return lock_bases(NAME, load_project(...), check=args.check, ...)

    def result_type() -> object:
        from gpuship.matrix.result import LockResult
        return LockResult
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Protocol, cast

from gpuship.cli.context import Context
from gpuship.report import Report

COMMAND_MODULES: tuple[str, ...] = (
    # `gpuship --help` lists commands in this order: the stages from pull request to release,
    # then reference tools.
    "gpuship.cli.commands.lint",
    "gpuship.cli.commands.inspect",
    "gpuship.cli.commands.matrix",
    "gpuship.cli.commands.lock",
    "gpuship.cli.commands.build",
    "gpuship.cli.commands.audit",
    "gpuship.cli.commands.verify",
    "gpuship.cli.commands.fleet",
    "gpuship.cli.commands.route",
    "gpuship.cli.commands.probe",
    "gpuship.cli.commands.promote",
    "gpuship.cli.commands.rollback",
    "gpuship.cli.commands.history",
    "gpuship.cli.commands.prune",
    "gpuship.cli.commands.rules",
    "gpuship.cli.commands.kb",
    "gpuship.cli.commands.docs",
    "gpuship.cli.commands.schema",
)


class Command(Protocol):
    """The shape of a command module."""

    NAME: str
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> Report: ...

    def result_type(self) -> object: ...


# Command name -> module: each module is named after its command.
MODULES: dict[str, str] = {module.rsplit(".", 1)[1]: module for module in COMMAND_MODULES}


def command_names() -> tuple[str, ...]:
    """Every command's name, without importing the command modules."""
    return tuple(MODULES)


def load_commands(names: Sequence[str] | None = None) -> list[Command]:
    """Import the registered command modules named (all when None), in registration order."""
    wanted = MODULES if names is None else [name for name in MODULES if name in names]
    return [cast(Command, importlib.import_module(MODULES[name])) for name in wanted]


def load_command(name: str) -> Command:
    """The module of one command; KeyError for a name that is not a command."""
    return cast(Command, importlib.import_module(MODULES[name]))
