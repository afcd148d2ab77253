"""Errors the user can cause, each with the exit code the CLI returns for it.

Stage code raises these; only `gpuship.cli.main` turns them into a message and an exit code
(DESIGN.md: one boundary). Messages are one line and name the file, line or field at fault.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_UNEXPECTED = 4
# Longest user-given text quoted back in a message: errors stay one readable line.
_SHOWN_CHARS = 60


# `scheme://userinfo@host` (RFC 3986 §3.2.1). Userinfo cannot hold "/", "?", "#", white
# space, quotes or brackets; it runs to the last "@" before them, since a password written
# with a raw "@" (`https://u:p@ss@host`) is still a password. A host starts with a letter, a
# digit, "[" (IPv6) or "%"; `https://...@<commit>` in a rule's advice is no URL. The match
# starts at "://", not at the scheme: from each of the many places a scheme could start
# (`a.a.a.a...`) the engine would scan again, quadratic in the text; a run of userinfo ends
# at the "/" of the next "://", so the whole text is read about once.
_USERINFO = re.compile(r"://(?P<userinfo>[^\s/?#\"<>\\\[\]{}]+)@(?=[A-Za-z0-9\[%])")
# Query parameters whose value is a credential: a pre-signed redirect (AWS SigV4
# `X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`; Google Cloud Storage V4
# `X-Goog-Signature`, `X-Goog-Credential`; Azure SAS `sig`; CloudFront and GCS V2 `Signature`;
# Docker Hub's blob redirect `verify=<expiry>-<hmac>`, as docker pull errors quote it) and
# OAuth-style tokens; names in any ASCII case. Only the value is hidden, up to the next "&",
# "#", white space, quote, bracket or backslash (which ends a JSON string's text).
_CREDENTIAL_PARAMETERS = (
    "x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential"
    "|signature|sig|verify|token|access_token|refresh_token|id_token|client_secret|password|jwt"
)
_QUERY_SECRET = re.compile(
    rf"(?P<before>[?&](?ai:{_CREDENTIAL_PARAMETERS})=)(?P<value>[^&#\s\"'<>\\\[\]{{}}]+)"
)


def redact_credentials(text: str) -> str:
    """`text` with the userinfo of every URL in it hidden: `https://user:***@host/...`, and
    `https://***@host/...` when the userinfo is one word (a token given as the user name);
    and the values of query parameters that carry a signature or token (`?X-Amz-Signature=***`).

    The one place credentials a user wrote into a URL are taken out of what gpuship says: the
    CLI boundary, every rendering of a report and the log stream pass their text through it.
    The password is hidden, the user name kept when there is a password (as pip does,
    `pip/_internal/utils/misc.py` redact_netloc). Time is linear in the text: a report of
    many MiB quoting hostile labels is read about twice.
    """
    if "@" in text:
        text = _USERINFO.sub(_hide, text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\g<before>***", text)
    return text


def redact_data(value: Any) -> Any:
    """A tree of JSON values with every string in it, keys too, passed through
    `redact_credentials`. For a rendering that escapes text as it serialises (JSON writes "ä"
    as `\\u00e4`, YAML as `\\xE4`), so the pattern would no longer see the password in
    what it wrote: it hides credentials in the data first."""
    if isinstance(value, str):
        return redact_credentials(value)
    if isinstance(value, dict):
        return {redact_data(key): redact_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    return value


def _hide(match: re.Match[str]) -> str:
    user, colon, _ = match["userinfo"].partition(":")
    hidden = f"{user}:***" if colon else "***"
    return f"://{hidden}@"


def shown(text: str) -> str:
    """`text` quoted for a message, cut to a readable length (a 100,000-digit "version"),
    credentials in URLs hidden first (a cut could leave a password without its "@")."""
    text = redact_credentials(text)
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}... ({len(text)} characters)"


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


# How CI systems and Kubernetes stop a process (GitHub Actions: SIGINT, then SIGTERM 7.5 s
# later, then SIGKILL); both end a command the same way, as `Interrupted`.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM arriving in the block wait until it ends: for clean-up that must
    finish (removing a container) when a second signal follows the first, as GitHub's SIGTERM
    follows its SIGINT. The last one that came is raised again after the block, to the
    handler that was in place.

    Python runs signal handlers in the main thread whichever thread the kernel picked, so the
    handlers are swapped rather than the main thread's signal mask blocked (a mask would not
    hold a signal delivered to another thread, and the load generator's and sampler's threads
    may still run).
    """
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)

    try:
        with stop_signals_handled_by(hold):
            yield
    finally:
        if held:
            signal.raise_signal(held[-1])


@contextlib.contextmanager
def stop_signals_handled_by(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """`handler` takes SIGINT and SIGTERM in the block; the handlers before it do after.
    Signal handlers belong to the main thread; elsewhere (a test calling `main` in a thread)
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, signal.SIG_DFL if before is None else before)
