"""BuildKit secrets and SSH agents for `RUN --mount=type=secret|ssh` (buildx only).

Three ways in, as docker/build-push-action offers them (`secrets`, `secret-envs`,
`secret-files`): `--secret id=ID,env=VAR` (the value stays in the environment),
`--secret id=ID,src=FILE`, and values in `GPUSHIP_BUILD_SECRETS` (one `ID=VALUE` per line,
what the action's `secrets` input sets), which buildx gets as private files. Values never appear
on a command line or in a message; only ids do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpuship.errors import InputError

SECRETS_VAR = "GPUSHIP_BUILD_SECRETS"
_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_SPEC_KEYS = frozenset({"type", "id", "src", "source", "env"})


def _fields(spec: str, flag: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in _SPEC_KEYS or not value:
            # The spec is not quoted: a value passed here by mistake must not reach the log.
            raise InputError(
                f"{flag}: expected id=ID,env=VARIABLE or id=ID,src=FILE (buildx syntax)"
            )
        fields[key.strip()] = value.strip()
    return fields


def check_secret_spec(spec: str, environ: Mapping[str, str], directory: Path) -> str:
    """A `--secret` value checked the way BuildKit will use it; InputError names what is
    missing (the variable or file), never a value."""
    fields = _fields(spec, "--secret")
    secret_id = fields.get("id", "")
    if not _ID.fullmatch(secret_id):
        raise InputError("--secret: needs id=ID (letters, digits, '._-')")
    source = fields.get("src") or fields.get("source")
    variable = fields.get("env")
    if (source is None) == (variable is None):
        raise InputError(f"--secret id={secret_id}: give exactly one of env=VARIABLE or src=FILE")
    if variable is not None and variable not in environ:
        raise InputError(f"--secret id={secret_id}: environment variable {variable} is not set")
    if source is not None and not (directory / source).is_file():
        raise InputError(f"--secret id={secret_id}: file {source} does not exist")
    return spec


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """`GPUSHIP_BUILD_SECRETS` as {id: value}; InputError naming the line number of a bad line."""
    values: dict[str, str] = {}
    for number, line in enumerate(environ.get(SECRETS_VAR, "").splitlines(), start=1):
        if not line.strip():
            continue
        secret_id, sep, value = line.partition("=")
        secret_id = secret_id.strip()
        if not sep or not _ID.fullmatch(secret_id):
            raise InputError(f"{SECRETS_VAR} line {number}: expected ID=VALUE")
        if secret_id in values:
            raise InputError(f"{SECRETS_VAR} line {number}: secret {secret_id} given twice")
        values[secret_id] = value
    return values


def check_ssh_spec(spec: str) -> str:
    """A `--ssh` value: `default`, or `ID[=SOCKET|KEY[,KEY...]]` as buildx takes it."""
    secret_id = spec.partition("=")[0]
    if not _ID.fullmatch(secret_id):
        raise InputError(f"--ssh {spec}: expected default or ID=PATH (buildx syntax)")
    return spec


def secret_ids(specs: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Every secret id a build gets (for its report); InputError if one is given twice."""
    ids = [_fields(spec, "--secret")["id"] for spec in specs] + list(values)
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputError(f"secret {duplicates[0]} is given twice")
    return ids
