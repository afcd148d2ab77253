"""Errors the user can cause, each with the exit code the CLI returns for it.

Stage code raises these; only `gpuship.cli.main` turns them into a message and an exit code
(DESIGN.md: one boundary). Messages are one line and name the file, line or field at fault.
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


class EnvironmentUnavailable(GpushipError):
    """Something outside gpuship that a command needs is not there or not answering."""

    exit_code = EXIT_ENVIRONMENT


class DockerUnavailable(EnvironmentUnavailable):
    """The Docker engine cannot be reached."""


class RegistryUnavailable(EnvironmentUnavailable):
    """A registry cannot be reached, or answered with a server error after retries."""


class GpuUnavailable(EnvironmentUnavailable):
    """NVML is missing, the driver is not loaded, no GPU is visible, or access is denied."""
