"""Everything gpuship says to the GitHub Actions runner, in one place.

Workflow commands and file commands follow actions/toolkit (`packages/core/src/command.ts`,
`file-command.ts`): `%`, CR and LF are escaped in messages, `:` and `,` too in properties;
multi-line outputs use a random `ghadelimiter_<uuid>` heredoc delimiter.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from pathlib import Path


def in_github_actions(environ: Mapping[str, str]) -> bool:
    """True when running as a GitHub Actions step."""
    return environ.get("GITHUB_ACTIONS") == "true"


def escape_data(value: str) -> str:
    """Escape a workflow-command message."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a workflow-command property value (`file=`, `title=`)."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    name: str, message: str, properties: Mapping[str, object] | None = None
) -> str:
    """`::name key=value,...::message` with every part escaped."""
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (properties or {}).items()
        if value is not None
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


# Credentials gpuship reads from the environment. GitHub masks `secrets.*` by itself, but a
# password produced by an earlier step (`aws ecr get-login-password`) is not a secret to it.
SECRET_VARIABLES = ("GPUSHIP_REGISTRY_PASSWORD", "GITHUB_TOKEN")
# JSON of registry credentials keyed by host (config.json's `auths` shape): each secret in it
# is masked on its own, so a log line quoting one of them is hidden too.
SECRET_JSON_VARIABLES = ("GPUSHIP_REGISTRY_AUTH",)
_SECRET_KEYS = ("password", "auth", "identitytoken", "registrytoken")
# `ID=VALUE` lines (BuildKit secret values for `gpuship build`): each value is masked.
SECRET_LINE_VARIABLES = ("GPUSHIP_BUILD_SECRETS",)


def mask(value: str) -> str:
    """The command that makes the runner hide `value` in all later log lines."""
    return workflow_command("add-mask", value)


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
        for key in _SECRET_KEYS:
            value = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(value, str) and value:
                found.append(value)
                if key == "auth":
                    found += _basic_password(value)
    return found


def _basic_password(auth: str) -> list[str]:
    try:
        _, _, password = base64.b64decode(auth, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return []
    return [password] if password else []


def mask_commands(environ: Mapping[str, str]) -> list[str]:
    """`add-mask` commands for every credential gpuship may read from `environ`."""
    values = [environ[name] for name in SECRET_VARIABLES if environ.get(name)]
    for name in SECRET_JSON_VARIABLES:
        if environ.get(name):
            values += _json_secrets(environ[name])
    for name in SECRET_LINE_VARIABLES:
        for line in environ.get(name, "").splitlines():
            value = line.partition("=")[2]
            if value.strip():
                values.append(value)
    return [mask(value) for value in dict.fromkeys(values)]


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
