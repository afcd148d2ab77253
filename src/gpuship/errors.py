"""Errors the user can cause, each with the exit code the CLI returns for it.

Stage code raises these; only `gpuship.cli.main` turns them into a message and an exit code
(DESIGN.md: one boundary). Messages are one line and name the file, line or field at fault;
text a message quotes goes through `gpuship.redaction.shown`.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_UNEXPECTED = 4


class GpushipError(Exception):
    """Base of every error with a user-facing message."""

    exit_code = EXIT_UNEXPECTED


class UsageError(GpushipError):
    """Bad command line: unknown subcommand or flag, missing argument."""

    exit_code = EXIT_USAGE


class ConfigError(GpushipError):
    """`gpuship.yaml` (or an environment override) is missing, malformed or invalid."""

    exit_code = EXIT_USAGE


class InputError(GpushipError):
    """A file, image reference or value given to a command is unreadable or invalid."""

    exit_code = EXIT_USAGE


class LimitExceeded(InputError):
    """An input passes one of the bounds in `gpuship.limits`; `limit` names it for the user.

    The message says what was read, how far it went, and which `limits.*` key to raise when
    the input is genuine.
    """

    def __init__(self, what: str, detail: str, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(f"{what}: {detail} (limit {limit}: {value})")


class EnvironmentUnavailable(GpushipError):
    """Something outside gpuship that a command needs is not there or not answering."""

    exit_code = EXIT_ENVIRONMENT


class DockerUnavailable(EnvironmentUnavailable):
    """The Docker engine cannot be reached."""


class RegistryUnavailable(EnvironmentUnavailable):
    """A registry cannot be reached, or answered with a server error after retries."""


class GpuUnavailable(EnvironmentUnavailable):
    """NVML is missing, the driver is not loaded, no GPU is visible, or access is denied."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (GitHub Actions cancels a job with SIGINT, then SIGTERM).

    Raised by the one signal handler at the CLI boundary, so a command stops where it is: a
    release puts back what it moved (or leaves a record a re-run completes) and still reports,
    then exits 128 + the signal number, as a shell would.
    """

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(name)
        self.signum = signum
        self.name = name
        self.exit_code = 128 + signum


def interrupt_exit_code(interrupt: KeyboardInterrupt) -> int:
    """The exit code for an interrupt: 128 + its signal (SIGINT: 130 when none is known)."""
    return interrupt.exit_code if isinstance(interrupt, Interrupted) else 130


def interrupt_name(interrupt: KeyboardInterrupt) -> str:
    """The signal that interrupted the command, for messages (SIGINT when none is known)."""
    return interrupt.name if isinstance(interrupt, Interrupted) else "SIGINT"
