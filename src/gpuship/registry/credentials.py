"""Which credential belongs to which registry host.

A credential belongs to one registry host, the way Docker's config.json scopes them (`auths`
keys, `credHelpers`, `credsStore`). For the registry asked about, the first source that names it
wins:

1. an explicit credential naming that registry: `GPUSHIP_REGISTRY` with
   `GPUSHIP_REGISTRY_USER`/`GPUSHIP_REGISTRY_PASSWORD`, or an entry of `GPUSHIP_REGISTRY_AUTH`
   (JSON keyed by host, entries shaped like config.json's `auths`);
2. `GITHUB_TOKEN`, for ghcr.io only;
3. Docker's own config (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`) read by
   `docker.auth`, which also runs `credHelpers`/`credsStore` helpers (`docker-credential-*`).

A registry no source names is reached anonymously. A credential also names the token services
(realms on another host) it may be sent to; see `gpuship.registry.auth` for that rule. Secrets
never appear in messages: errors name the variable or file, never its value.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuship.errors import InputError
from gpuship.redaction import hold, shown
from gpuship.reference import DOCKER_HUB, normalise_registry
from gpuship.registry.errors import RegistryAuthError
from gpuship.registry.origin import Origin

GHCR = "ghcr.io"
REGISTRY_VAR = "GPUSHIP_REGISTRY"
USER_VAR = "GPUSHIP_REGISTRY_USER"
# Names of environment variables, not secrets:
PASSWORD_VAR = "GPUSHIP_REGISTRY_PASSWORD"  # noqa: S105
TOKEN_SERVICE_VAR = "GPUSHIP_REGISTRY_TOKEN_SERVICE"  # noqa: S105
AUTH_VAR = "GPUSHIP_REGISTRY_AUTH"

# Registries whose token service lives on another host, as they answer today. Their own
# credential may go there; nothing else may. Sources: distribution docs/spec/auth/token.md
# (registry-1.docker.io -> auth.docker.io); NVIDIA/nvidia-container-toolkit#1945 (nvcr.io ->
# authn.nvidia.com after a token expires); deitch/docker_registry2#14 (registry.gitlab.com ->
# gitlab.com/jwt/auth).
KNOWN_TOKEN_SERVICES: Mapping[str, tuple[str, ...]] = {
    DOCKER_HUB: ("https://auth.docker.io",),
    "nvcr.io": ("https://authn.nvidia.com",),
    "registry.gitlab.com": ("https://gitlab.com",),
}


@dataclass(frozen=True)
class Credentials:
    """A username/password or an identity (refresh) token, the registry it belongs to, where it
    came from, and the token services on other hosts it may also be sent to."""

    source: str
    registry: str
    username: str | None = None
    # Out of repr: a traceback or an assertion message must never show a secret.
    password: str | None = field(default=None, repr=False)
    identity_token: str | None = field(default=None, repr=False)
    token_services: tuple[Origin, ...] = ()

    def basic_header(self) -> str | None:
        """`Basic …` for username/password credentials, None for token-only ones."""
        if self.username is None or self.password is None:
            return None
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()

    def secrets(self) -> tuple[str, ...]:
        """Every value of this credential that a request carries: the password or identity
        token, and the base64 of `user:password` its Basic header sends."""
        basic = self.basic_header()
        found = (
            self.password,
            self.identity_token,
            basic.removeprefix("Basic ") if basic else None,
        )
        return tuple(value for value in found if value)


class _AuthEntry(BaseModel):
    """One `GPUSHIP_REGISTRY_AUTH` entry: config.json's `auths` fields plus our token services."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    username: str | None = None
    password: str | None = None
    auth: str | None = Field(default=None, description="base64 of `user:password`")
    identitytoken: str | None = None
    token_services: list[str] = Field(default_factory=list, alias="token-services")


def token_service_origins(urls: list[str], where: str) -> tuple[Origin, ...]:
    """The origins of token-service URLs; InputError naming `where` for a bad one."""
    try:
        return tuple(Origin.of(url) for url in urls)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def _entry_credentials(host: str, entry: _AuthEntry, source: str) -> Credentials:
    services = token_service_origins(entry.token_services, f"{source} entry {host!r}")
    if entry.identitytoken:
        return Credentials(
            source, host, identity_token=entry.identitytoken, token_services=services
        )
    username, password = entry.username, entry.password
    if entry.auth:
        import docker.auth

        try:
            username, password = docker.auth.decode_auth(entry.auth)
        except (ValueError, TypeError):
            raise InputError(
                f"{source} entry {host!r}: 'auth' is not base64 of user:password"
            ) from None
    if bool(username) != bool(password):
        raise InputError(f"{source} entry {host!r}: give both username and password")
    return Credentials(source, host, username or None, password or None, token_services=services)


def _parse_auth_variable(text: str) -> dict[str, Credentials]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{AUTH_VAR} is not JSON ({error.msg} at line {error.lineno})") from None
    if isinstance(document, dict) and isinstance(document.get("auths"), dict):
        document = document["auths"]  # a pasted config.json
    if not isinstance(document, dict):
        raise InputError(f"{AUTH_VAR} must be a JSON object keyed by registry host")
    found: dict[str, Credentials] = {}
    for key, value in document.items():
        host = normalise_registry(str(key))
        try:
            entry = _AuthEntry.model_validate(value)
        except ValidationError as error:
            # The error text would quote the input, which holds secrets: name fields only.
            fields = ", ".join(
                ".".join(str(p) for p in e["loc"]) or "entry" for e in error.errors()
            )
            raise InputError(f"{AUTH_VAR} entry {shown(str(key))}: invalid {fields}") from None
        if host in found:
            raise InputError(f"{AUTH_VAR} names registry {host} twice")
        found[host] = _entry_credentials(host, entry, AUTH_VAR)
    return found


def _single_credential(environ: Mapping[str, str]) -> Credentials | None:
    user, password = environ.get(USER_VAR), environ.get(PASSWORD_VAR)
    registry = environ.get(REGISTRY_VAR)
    if not user and not password:
        if environ.get(TOKEN_SERVICE_VAR) and not registry:
            raise InputError(f"{TOKEN_SERVICE_VAR} is set but {REGISTRY_VAR} names no registry")
        return None
    if not user or not password:
        raise InputError(f"set both {USER_VAR} and {PASSWORD_VAR}, or neither")
    if not registry:
        raise InputError(
            f"{USER_VAR} is set but {REGISTRY_VAR} names no registry: a credential is only ever "
            "sent to the registry it is given for (set e.g. GPUSHIP_REGISTRY=ghcr.io)"
        )
    host = normalise_registry(registry)
    services = [s for s in environ.get(TOKEN_SERVICE_VAR, "").split() if s]
    origins = token_service_origins(services, TOKEN_SERVICE_VAR)
    return Credentials(f"{USER_VAR}/{PASSWORD_VAR}", host, user, password, token_services=origins)


def explicit_credentials(environ: Mapping[str, str]) -> dict[str, Credentials]:
    """Every explicit credential in `environ`, keyed by the registry host it names."""
    found = _parse_auth_variable(environ[AUTH_VAR]) if environ.get(AUTH_VAR) else {}
    single = _single_credential(environ)
    if single is not None:
        if single.registry in found:
            raise InputError(
                f"registry {single.registry} has two explicit credentials ({REGISTRY_VAR} "
                f"and {AUTH_VAR}); give one"
            )
        found[single.registry] = single
    return found


class CredentialStore:
    """Looks credentials up per registry host, once each; explicit ones are parsed up front so a
    malformed variable fails before any request."""

    def __init__(self, environ: Mapping[str, str], docker_config: Path | None = None) -> None:
        self._environ = environ
        self._docker_config = docker_config
        self._explicit = explicit_credentials(environ)

    def find(self, registry: str) -> Credentials | None:
        """The credential for `registry` (a normalised host), or None to go anonymous; held
        (`gpuship.redaction.hold`) before anything sends it, in every form a request carries."""
        found = self._find(registry)
        if found is not None:
            hold(*found.secrets())
        return found

    def token_services(self, registry: str) -> tuple[Origin, ...]:
        """The token services an explicit entry names for `registry`, with or without a
        credential (an entry may name only `token-services`)."""
        explicit = self._explicit.get(registry)
        return explicit.token_services if explicit is not None else ()

    def _find(self, registry: str) -> Credentials | None:
        explicit = self._explicit.get(registry)
        if explicit is not None and (explicit.username or explicit.identity_token):
            return explicit
        token = self._environ.get("GITHUB_TOKEN")
        if registry == GHCR and token:
            # GHCR takes any username with a token; the actor name keeps its audit log readable.
            actor = self._environ.get("GITHUB_ACTOR") or "x-access-token"
            return Credentials("GITHUB_TOKEN", GHCR, actor, token)
        found = docker_config_credentials(registry, self._environ, self._docker_config)
        if found is not None and explicit is not None:
            # An entry with only `token-services` adds trust to the credential found elsewhere.
            return replace(found, token_services=explicit.token_services)
        return found


def docker_config_credentials(
    registry: str, environ: Mapping[str, str], docker_config: Path | None = None
) -> Credentials | None:
    """The credential Docker's config holds for `registry` (helpers run), or None."""
    # Lazy: importing docker costs time, and most runs never need a credential lookup.
    import docker.auth

    config_path = docker_config
    if config_path is None and environ.get("DOCKER_CONFIG"):
        config_path = Path(environ["DOCKER_CONFIG"]) / "config.json"
    where = str(config_path) if config_path is not None else "~/.docker/config.json"
    key = None if registry == DOCKER_HUB else registry
    try:
        config = docker.auth.load_config(
            config_path=str(config_path) if config_path is not None else None,
            credstore_env=dict(environ),
        )
        if config.creds_store or config.cred_helpers:
            _check_helper_name(config.get_credential_store(key), registry, where)
        entry: dict[str, Any] | None = config.resolve_authconfig(key)
    except InputError:
        raise
    except Exception as error:  # docker.auth raises assorted errors for broken files/helpers
        raise RegistryAuthError(
            f"cannot read registry credentials for {registry} from {where}: {error}",
            status=0,
        ) from None
    if not entry:
        return None
    identity = entry.get("IdentityToken")
    if identity:
        return Credentials(f"identity token in {where}", registry, identity_token=str(identity))
    username = entry.get("Username") or entry.get("username")
    password = entry.get("Password") or entry.get("password")
    if username and password:
        return Credentials(where, registry, str(username), str(password))
    return None


# A credential helper is `docker-credential-NAME` looked up on PATH: NAME is one file name.
# docker.auth (like Docker's CLI, through Go's exec.LookPath) runs a NAME holding a "/" as a
# path, so `credHelpers: {host: "sub/pwn"}` would run `./docker-credential-sub/pwn` from the
# working directory (a checked-out repository); such names are refused before anything runs.
_HELPER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _check_helper_name(name: object, registry: str, where: str) -> None:
    if name is None or (isinstance(name, str) and _HELPER_NAME.fullmatch(name)):
        return
    raise InputError(
        f"{where}: the credential helper {shown(str(name))} for {registry} is not a helper "
        "name (letters, digits, '.', '_', '-'; docker-credential-NAME is looked up on PATH); "
        "it was not run"
    )
