"""`gpuship` entry point: parse, load config, run one command, render, exit.

This is the one boundary where typed errors become a single line and an exit code
(0 ok, 1 failed, 2 usage/config/input, 3 environment, 4 unexpected with traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from gpuship import __version__, gha
from gpuship.cli import extras
from gpuship.cli.context import Context
from gpuship.cli.registry import MODULES, CommandModule, load_commands
from gpuship.config.locate import find_config_file
from gpuship.errors import (
    EXIT_OK,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    GpushipError,
    Interrupted,
    UsageError,
    interrupt_exit_code,
    interrupt_name,
)
from gpuship.redaction import HELD, hold, redact_credentials
from gpuship.report.catalog import apply_overrides
from gpuship.report.model import Severity
from gpuship.report.render import DOCUMENT_FORMATS, FORMATS, emit
from gpuship.signals import stop_signals_handled_by

DESCRIPTION = """\
gpuship keeps GPU container images for AI/ML healthy from pull request to production:
lint Dockerfiles and images, build a validated CUDA matrix, verify a GPU host can run an
image before a job takes its slot, load-test a candidate against SLOs and the current stable,
and promote releases by digest with one-command rollback.
"""

EPILOG = """\
exit codes: 0 ok, 1 checks failed, 2 usage/config/input error,
            3 environment unavailable (Docker, GPU, registry, network), 4 unexpected error,
            130 or 143 interrupted by SIGINT or SIGTERM
config:     --config PATH, else ./gpuship.yaml; GPUSHIP_<KEY> environment variables
            (GPUSHIP_<SECTION>__<KEY> for nested keys) override the file; flags override both.
"""


class _CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are a `UsageError`, reported at the boundary."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    # The same flags are accepted before and after the subcommand; only the top-level
    # parser sets defaults, so a flag given first is not reset by the subparser.
    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("global options")
    group.add_argument(
        "--config",
        metavar="PATH",
        default=default(None),
        help="config file (default: ./gpuship.yaml)",
    )
    group.add_argument(
        "--format",
        choices=FORMATS,
        default=default(None),
        help="output format (default: github under GitHub Actions, text elsewhere; k8s: "
        "Kubernetes node constraints, arc: Actions Runner Controller scale sets, gpuship route "
        "only)",
    )
    group.add_argument(
        "--fail-on",
        choices=("error", "warning", "note", "never"),
        default=default(None),
        help="lowest severity that fails the command (default: config fail-on, else error)",
    )
    group.add_argument(
        "--deadline",
        metavar="SECONDS",
        type=_seconds,
        default=default(None),
        help="most seconds the command waits on registries in all (default: config "
        "`deadline`, else 600)",
    )
    group.add_argument(
        "--output", metavar="FILE", default=default(None), help="write the report to FILE"
    )
    group.add_argument(
        "--sarif", metavar="FILE", default=default(None), help="also write a SARIF report to FILE"
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


# Global options that take a value as the next word (`--config PATH`).
_VALUE_OPTIONS = frozenset(
    ("--config", "--format", "--fail-on", "--output", "--sarif", "--deadline")
)


def command_named(argv: Sequence[str]) -> str | None:
    """The command word of a command line; None when there is none or help is asked first."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help", "--version"):
            return None
        if word in _VALUE_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command-line parser for `argv`: the command it names gets its full subparser, the
    others only their name (their modules stay unimported); no command named: all in full."""
    wanted = command_named(argv) if argv is not None else None
    parser = _CommandLineParser(
        prog="gpuship",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gpuship {__version__}")
    _global_options(parser, defaults=True)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_CommandLineParser
    )
    loaded = {c.NAME: c for c in load_commands(None if wanted is None else (wanted,))}
    for name in [*MODULES, *(name for name in loaded if name not in MODULES)]:
        command = loaded.get(name)
        if command is None:
            subparsers.add_parser(name)  # named, so a typo's error lists every command
            continue
        sub = subparsers.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(sub)
        _add_global_options_everywhere(sub)
        sub.set_defaults(_command=command)
    return parser


def _add_global_options_everywhere(parser: argparse.ArgumentParser) -> None:
    """Accept the global flags after a command and after its own sub-commands (`kb torch`)."""
    _global_options(parser, defaults=False)
    for action in parser._actions:  # argparse exposes nested sub-parsers only this way
        if isinstance(action, argparse._SubParsersAction):
            for nested in set(action.choices.values()):
                _add_global_options_everywhere(nested)


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one gpuship command and return its exit code."""
    environ = os.environ if environ is None else environ
    stdout = stdout or sys.stdout
    in_actions = gha.in_github_actions(environ)
    if in_actions:
        # On stderr, which the runner reads for commands too, so stdout stays pure JSON/SARIF.
        for mask in gha.mask_commands(environ):
            (stderr or sys.stderr).write(mask + "\n")
    HELD.forget()
    hold(*gha.environment_secrets(environ))
    # Every other line on stderr (errors, progress, a traceback) may quote a file name or a
    # registry's answer: credentials hidden, and under Actions no workflow command.
    log = gha.LogStream(stderr or sys.stderr, inert=in_actions, redact=redact_credentials)
    # A credential found later (Docker's config, a token service's token) is masked as it is
    # held, before it is sent.
    unlisten = HELD.listen(lambda value: _mask(log, value)) if in_actions else None
    stop = _Stop()
    try:
        progress = gha.LogStream(sys.stderr, inert=in_actions, redact=redact_credentials)
        with _signals_interrupt(stop), contextlib.redirect_stderr(progress):
            try:
                return _run(argv, environ, stdout, log, stop)
            finally:
                progress.flush()
    except GpushipError as exc:
        message = redact_credentials(str(exc))
        log.write(f"gpuship: error: {message}\n")
        if in_actions:
            stdout.write(gha.workflow_command("error", message, {"title": "gpuship"}) + "\n")
        return exc.exit_code
    except SystemExit as exc:  # --help and --version
        code = exc.code
        return code if isinstance(code, int) else 0
    except KeyboardInterrupt as interrupt:
        log.write(f"gpuship: interrupted by {interrupt_name(interrupt)}\n")
        if stop.holding:
            log.write(
                "gpuship: its registry work had finished; the report was not written in full "
                "(`gpuship history` shows what the registry holds)\n"
            )
        return interrupt_exit_code(interrupt)
    except Exception:
        import traceback  # only for a bug: every start pays for an import at the top

        traceback.print_exc(file=log)
        log.write("gpuship: unexpected error; this is a bug, please report it with the above\n")
        return EXIT_UNEXPECTED
    finally:
        if unlisten is not None:
            unlisten()
        log.flush()


def _mask(log: gha.LogStream, value: str) -> None:
    for command in gha.mask_lines(value):
        log.command(command)


class _Stop:
    """Which signals arrived, and whether the next one stops the command.

    The first SIGINT or SIGTERM stops it (raises `Interrupted`): a release then puts back
    what it moved. A later signal of the other kind is the same stop, not a new one: GitHub
    Actions sends SIGTERM 7.5 s after its SIGINT, and that must not cut short the putting
    back, which has 2.5 s more before SIGKILL. The same signal again (Ctrl-C pressed twice),
    or a third, is someone insisting: it stops the clean-up too, as a second Ctrl-C does for
    terraform or docker compose.

    Once a command that changes a registry has done its registry work (`hold`), the first
    signal stops nothing: it is noted, so the report and step outputs are written and the
    exit code says what the registry holds; insisting still stops the writing.
    """

    def __init__(self) -> None:
        self.seen: list[signal.Signals] = []
        self.held: list[signal.Signals] = []
        self.holding = False

    def hold(self) -> None:
        """The registry work is done: from now on only an insisting signal stops."""
        self.holding = True

    def arrived(self, signum: int) -> None:
        """Raise `Interrupted` if this signal stops the command; note it otherwise."""
        kind = signal.Signals(signum)
        earlier = self.seen
        self.seen = [*earlier, kind]
        if (not earlier and not self.holding) or kind in earlier or len(earlier) >= 2:
            raise Interrupted(signum, kind.name)
        if self.holding:
            self.held.append(kind)


@contextlib.contextmanager
def _signals_interrupt(stop: _Stop) -> Iterator[None]:
    """The one place signals are handled: SIGINT and SIGTERM go to `stop`, which raises
    `Interrupted` in the main thread when one stops the command, so it stops where it is and
    a release can put back what it moved and report it."""

    def arrived(signum: int, _frame: object) -> None:
        stop.arrived(signum)

    with stop_signals_handled_by(arrived):
        yield


def _run(
    argv: Sequence[str] | None,
    environ: Mapping[str, str],
    stdout: TextIO,
    stderr: gha.LogStream,
    stop: _Stop,
) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    with contextlib.redirect_stdout(stdout):  # --help and --version print to stdout
        args = parser.parse_args(argv)
    command: CommandModule | None = getattr(args, "_command", None)
    if command is None:
        parser.print_help(stdout)
        return EXIT_USAGE
    if args.format in DOCUMENT_FORMATS and args.format not in getattr(command, "FORMATS", ()):
        raise UsageError(f"--format {args.format}: 'gpuship {command.NAME}' has no such output")
    extra = extras.needed(command.NAME, args)
    if extra is not None:
        extras.require(command.NAME, extra)
    ctx = Context(
        config_path=find_config_file(args.config, Path.cwd()),
        environ=environ,
        flags=_config_flags(args, command),
        registry_work_done=stop.hold,
    )
    ctx.validate_config()
    try:
        report = command.run(args, ctx)
    except ModuleNotFoundError as exc:
        hint = extras.explain(command.NAME, exc)
        if hint is None:
            raise
        raise hint from None
    if report.changes:
        stop.hold()  # the command says so itself, earlier; this is for one that forgot
    # The one place gpuship.yaml's rule severities reach findings, for every command.
    apply_overrides(report, ctx.rule_overrides)
    fail_on = None if ctx.fail_on == "never" else Severity(ctx.fail_on)
    exit_code = report.exit_code(fail_on)
    # What every rendering says (JSON `failed`, the `failed` step output, the summary's
    # verdict) is what the exit code says: findings at --fail-on fail the run too.
    report.failed = exit_code != EXIT_OK
    fmt = args.format or ("github" if gha.in_github_actions(environ) else "text")
    unwritten = emit(report, fmt, stdout, environ, output_file=args.output, sarif_file=args.sarif)
    for message in _after_the_report(command.NAME, unwritten, stop):
        stderr.write(f"gpuship: warning: {message}\n")
        if gha.in_github_actions(environ):
            stdout.write(gha.workflow_command("warning", message, {"title": "gpuship"}) + "\n")
    return exit_code


# Global flags that set a shared key of gpuship.yaml: argparse dest -> config key.
_GLOBAL_CONFIG_FLAGS = {"fail_on": "fail-on", "deadline": "deadline"}


def _config_flags(args: argparse.Namespace, command: CommandModule) -> dict[str, object]:
    """Config key -> the value its flag gave (None: not given), for `config.options`."""
    flags = {**_GLOBAL_CONFIG_FLAGS, **getattr(command, "CONFIG_FLAGS", {})}
    return {key: getattr(args, dest) for dest, key in flags.items()}


def _after_the_report(name: str, unwritten: list[str], stop: _Stop) -> list[str]:
    """Warnings for a command that changed a registry: its exit code and step outputs say how,
    so neither a report file it could not write nor a signal once its work was done turns a
    shipped release into a failed step."""
    warnings = [
        f"{problem}; the {name} itself is done and its exit code says how" for problem in unwritten
    ]
    if stop.held:
        # Named in a fixed order: which signals came is the news, not the order the kernel
        # delivered two that were sent together.
        names = " and ".join(kind.name for kind in sorted(set(stop.held)))
        warnings.append(
            f"{names} arrived after the {name} had finished its registry work and stopped "
            "nothing: its report and outputs are written and its exit code says how it ended"
        )
    return warnings


def entry_point() -> None:
    """Console-script entry point."""
    sys.exit(main())
