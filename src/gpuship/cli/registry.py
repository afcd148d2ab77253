"""Which module defines each command, and the shape of a command module.

The commands are the stages' (`cli/stages.py`) and the CLI's own. Each module defines `NAME`,
`HELP`, `add_arguments(parser)`, `run(args, ctx) -> Report` and `result_type()`, the type of
its `Report.result` (from which `gpuship schema --result NAME` publishes the JSON Schema of its
`--format json` document); optionally `FORMATS`, the document formats it writes besides the
report (`route`: k8s, arc), and `CONFIG_FLAGS`, argparse dest -> the gpuship.yaml key its flag
sets (`config/options.py` resolves them). Heavy imports stay inside `run` and `result_type`.
A command line names one command, so only that module is imported (`gpuship lint` starts
without the others); `gpuship --help` imports them all for their help lines. A command module
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
from gpuship.cli.stages import command_names
from gpuship.report import Report


class CommandModule(Protocol):
    """The shape of a command module."""

    NAME: str
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> Report: ...

    def result_type(self) -> object: ...


# Command name -> module, in `gpuship --help` order: each module is named after its command.
MODULES: dict[str, str] = {name: f"gpuship.cli.commands.{name}" for name in command_names()}


def load_commands(names: Sequence[str] | None = None) -> list[CommandModule]:
    """Import the registered command modules named (all when None), in registration order."""
    wanted = MODULES if names is None else [name for name in MODULES if name in names]
    return [cast(CommandModule, importlib.import_module(MODULES[name])) for name in wanted]


def load_command(name: str) -> CommandModule:
    """The module of one command; KeyError for a name that is not a command."""
    return cast(CommandModule, importlib.import_module(MODULES[name]))
