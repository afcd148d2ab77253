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


def load_commands() -> list[Command]:
    """Import every registered command module, in registration order."""
    return [cast(Command, importlib.import_module(name)) for name in COMMAND_MODULES]
