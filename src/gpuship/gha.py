"""Everything gpuship says to the GitHub Actions runner, in one place.

Workflow commands and file commands follow actions/toolkit (`packages/core/src/command.ts`,
`file-command.ts`): `%`, CR and LF are escaped in messages, `:` and `,` too in properties;
multi-line outputs use a random `ghadelimiter_<uuid>` heredoc delimiter.

Any other text in the log (a report, an error, progress) may quote a file name, a directory
name or a registry's error body, so it is made inert before it reaches the runner
(`neutralise`, `LogStream`): the runner reads every line of a step's output for commands
(actions/runner `src/Runner.Worker/ActionCommandManager.cs` TryProcessCommand), a line whose
text after leading white space starts with `::` (`ActionCommand.TryParseV2`) and a line holding
`##[` anywhere (the older `ActionCommand.TryParse`, still read), for commands such as
`add-mask`, `stop-commands` and `set-output`. Lines end at CR or LF (.NET `ReadLine`).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from gpuship.redaction import redact_credentials


def in_github_actions(environ: Mapping[str, str]) -> bool:
    """True when running as a GitHub Actions step."""
    return environ.get("GITHUB_ACTIONS") == "true"


def escape_data(value: str) -> str:
    """Escape a workflow-command message."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a workflow-command property value (`file=`, `title=`)."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


# A line start (of the text, or after CR or LF), its white space, then `::`.
_COMMAND_AT_LINE_START = re.compile(r"(?:^|(?<=[\r\n]))(\s*)::")
_COMMAND_AFTER_BREAK = re.compile(r"(?<=[\r\n])(\s*)::")
_LEGACY_PREFIX = "##["


def neutralise(text: str, *, line_start: bool = True) -> str:
    """`text` with nothing in it the runner takes for a workflow command, shown as GitHub
    escapes data: a line starting `::` starts `%3A:` instead, and `##[` is `#%23[`.
    `line_start=False`: `text` goes on a line already begun (its first line is not a start).
    """
    text = text.replace(_LEGACY_PREFIX, "#%23[")
    pattern = _COMMAND_AT_LINE_START if line_start else _COMMAND_AFTER_BREAK
    return pattern.sub(r"\1%3A:", text)


def neutralise_json(text: str) -> str:
    """JSON text with `##[` written `#\\u0023[` inside its strings (the only place it can be):
    the same document for a JSON reader, no command for the runner. A JSON line cannot start
    with `::`."""
    return text.replace(_LEGACY_PREFIX, "#\\u0023[")


class LogStream(io.TextIOBase):
    """A text stream that passes what is written to it through `redact` (each write whole)
    and, for the runner's log (`inert=True`), makes workflow commands inert (`neutralise`)
    whatever the pieces it is written in: the start of a line that could still become `::`,
    and a trailing `#` or `##`, are held until the next write or `flush()`. Writes from
    several threads are serialised.
    """

    def __init__(self, stream: TextIO, *, inert: bool, redact: Callable[[str], str]) -> None:
        super().__init__()
        self._stream = stream
        self._inert = inert
        self._redact = redact
        self._held = ""
        self._line_start = True  # `_held` begins a line
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            if not self._inert:
                self._stream.write(self._redact(text))
                return len(text)
            data = self._held + text
            cut = _undecided_tail(data, self._line_start)
            ready, self._held = data[:cut], data[cut:]
            if ready:
                self._stream.write(neutralise(self._redact(ready), line_start=self._line_start))
                self._line_start = ready[-1] in "\r\n"
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._write_held()
        self._stream.flush()

    def command(self, line: str) -> None:
        """Write one of gpuship's own workflow commands (`mask`) as it is, on a line of its
        own: after what is held, and after a line break if a line is under way."""
        with self._lock:
            self._write_held()
            self._stream.write(("" if self._line_start else "\n") + line + "\n")
            self._line_start = True
        self._stream.flush()

    def _write_held(self) -> None:
        if self._held:
            self._stream.write(neutralise(self._held, line_start=self._line_start))
            self._line_start = self._held[-1] in "\r\n"
            self._held = ""

    def close(self) -> None:
        # Ends the wrapper only: the stream it writes to is its owner's to close.
        with contextlib.suppress(ValueError, OSError):
            self.flush()
        super().close()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8") or "utf-8"


def _undecided_tail(data: str, line_start: bool) -> int:
    """Where the part of `data` that the next write could still turn into a command begins:
    a line begun with only white space (and perhaps one `:`), else trailing `#`s."""
    breaks = max(data.rfind("\r"), data.rfind("\n"))
    if breaks >= 0 or line_start:
        last = breaks + 1
        if data[last:].lstrip() in ("", ":"):
            return last
    hashes = len(data) - len(data.rstrip("#"))
    return len(data) - min(hashes, 2)


def workflow_command(
    name: str, message: str, properties: Mapping[str, object] | None = None
) -> str:
    """`::name key=value,...::message` with every part escaped, credentials hidden before
    (`redact_credentials`: a password holding `:` or `%` is no longer itself once escaped)."""
    props = ",".join(
        f"{key}={escape_property(redact_credentials(str(value)))}"
        for key, value in (properties or {}).items()
        if value is not None
    )
    return _command(name, redact_credentials(message), props)


def _command(name: str, message: str, props: str = "") -> str:
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


# Credentials gpuship reads from the environment. GitHub masks `secrets.*` by itself, but a
# password produced by an earlier step (`aws ecr get-login-password`) is not a secret to it.
SECRET_VARIABLES = ("GPUSHIP_REGISTRY_PASSWORD", "GITHUB_TOKEN", "GPUSHIP_RUNNER_TOKEN")
# JSON of registry credentials keyed by host (config.json's `auths` shape): each secret in it
# is masked on its own, so a log line quoting one of them is hidden too.
SECRET_JSON_VARIABLES = ("GPUSHIP_REGISTRY_AUTH",)
_SECRET_KEYS = ("password", "auth", "identitytoken", "registrytoken")
# `ID=VALUE` lines (BuildKit secret values for `gpuship build`): each value is masked.
SECRET_LINE_VARIABLES = ("GPUSHIP_BUILD_SECRETS",)


def mask(value: str) -> str:
    """The command that makes the runner hide `value` in all later log lines (the value as it
    is: hidden from the command, it would mask nothing)."""
    return _command("add-mask", value)


def mask_lines(value: str) -> list[str]:
    """The `add-mask` commands for `value`: the value, and each of its lines when it has
    several. The runner masks line by line (actions/runner `ActionCommandManager.cs`
    AddMaskCommandExtension adds each line itself since runner PR #1521; an older runner
    only the whole value, which a log line never holds), so each line is sent too."""
    lines = [line.strip() for line in re.split(r"[\r\n]+", value) if line.strip()]
    return [mask(item) for item in dict.fromkeys([value, *(lines if len(lines) > 1 else [])])]


def _json_secrets(text: str) -> list[str]:
    """Secret values inside a credentials JSON; read leniently, because masking must happen
    before anything validates it (a malformed entry still holds a real password)."""
    try:
        document = json.loads(text)
    except ValueError:
        return [text]
    entries = document.get("auths", document) if isinstance(document, dict) else {}
    found: list[str] = []
    for entry in entries.values() if isinstance(entries, dict) else ():
        if not isinstance(entry, dict):
            continue
        for key in _SECRET_KEYS:
            value = entry.get(key)
            if isinstance(value, str) and value:
                found.append(value)
                if key == "auth":
                    found += _basic_password(value)
        found += _basic_value(entry.get("username"), entry.get("password"))
    return found


def _basic_value(username: object, password: object) -> list[str]:
    """The base64 of `username:password` a Basic header sends, when both are there."""
    if not (isinstance(username, str) and isinstance(password, str) and username and password):
        return []
    return [base64.b64encode(f"{username}:{password}".encode()).decode()]


def _basic_password(auth: str) -> list[str]:
    try:
        _, _, password = base64.b64decode(auth, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return []
    return [password] if password else []


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """Every credential gpuship may read from `environ`, and the Basic value of the
    username and password it names (`GPUSHIP_REGISTRY_USER`/`_PASSWORD`)."""
    values = [environ[name] for name in SECRET_VARIABLES if environ.get(name)]
    values += _basic_value(environ.get("GPUSHIP_REGISTRY_USER"), environ.get(SECRET_VARIABLES[0]))
    for name in SECRET_JSON_VARIABLES:
        if environ.get(name):
            values += _json_secrets(environ[name])
    for name in SECRET_LINE_VARIABLES:
        for line in environ.get(name, "").splitlines():
            value = line.partition("=")[2]
            if value.strip():
                values.append(value)
    return list(dict.fromkeys(values))


def mask_commands(environ: Mapping[str, str]) -> list[str]:
    """`add-mask` commands for every credential gpuship may read from `environ`."""
    return [command for value in environment_secrets(environ) for command in mask_lines(value)]


def format_output(name: str, value: str) -> str:
    """One `$GITHUB_OUTPUT` entry; heredoc form with a random delimiter when multi-line."""
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    import uuid  # here: it imports `platform`, a cost every command would pay at start-up

    delimiter = f"ghadelimiter_{uuid.uuid4()}"
    if delimiter in name or delimiter in value:  # pragma: no cover - a uuid4 collision
        raise ValueError("output value contains its own delimiter")
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def write_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append step outputs to the `$GITHUB_OUTPUT` file."""
    with path.open("a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            handle.write(format_output(name, value))


def append_summary(path: Path, markdown: str) -> None:
    """Append Markdown to the step's `$GITHUB_STEP_SUMMARY` file."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(markdown)
        if not markdown.endswith("\n"):
            handle.write("\n")


def workspace_relative(file: str, environ: Mapping[str, str]) -> str:
    """A path as GitHub annotations want it: relative to `GITHUB_WORKSPACE` when inside it."""
    workspace = environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return file
    try:
        absolute = Path(file) if os.path.isabs(file) else Path.cwd() / file
        return absolute.resolve().relative_to(Path(workspace).resolve()).as_posix()
    except ValueError:
        return file
