"""Registry credentials and the 401 challenge flow (Basic, and Bearer tokens with scopes).

Credential sources, first match wins: GPUSHIP_REGISTRY_USER/GPUSHIP_REGISTRY_PASSWORD (any
registry), GITHUB_TOKEN for ghcr.io, then Docker's own config (`$DOCKER_CONFIG/config.json` or
`~/.docker/config.json`) through `docker.auth`, which runs `credHelpers`/`credsStore` helpers
(`docker-credential-*`). The token flow is distribution's `docs/spec/auth/token.md` (GET with
repeated `scope=`) and, for identity tokens, `docs/spec/auth/oauth.md` (POST refresh_token).
Secrets never appear in messages; errors name only the credential source.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from gpuship.registry.errors import RegistryAuthError
from gpuship.registry.reference import DOCKER_HUB

GHCR = "ghcr.io"
# token.md: "expires_in ... defaults to 60 seconds"; renew a little early so a slow request
# started on an almost-expired token does not fail.
DEFAULT_TOKEN_LIFETIME_S = 60
TOKEN_RENEW_MARGIN_S = 10
_PARAM_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True)
class Credentials:
    """A username/password or an identity (refresh) token, and where it came from."""

    source: str
    username: str | None = None
    password: str | None = None
    identity_token: str | None = None

    def basic_header(self) -> str | None:
        """`Basic …` for username/password credentials, None for token-only ones."""
        if self.username is None or self.password is None:
            return None
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode()


@dataclass(frozen=True)
class Challenge:
    """A parsed `WWW-Authenticate` header: the scheme and its parameters."""

    scheme: str
    params: Mapping[str, str]


def parse_challenge(header: str) -> Challenge:
    """Parse `Bearer realm="…",service="…",scope="…"` (RFC 6750 §3) or `Basic realm="…"`."""
    scheme, _, rest = header.strip().partition(" ")
    params = {
        match.group(1).lower(): (
            match.group(2).replace('\\"', '"') if match.group(2) is not None else match.group(3)
        )
        for match in _PARAM_RE.finditer(rest)
    }
    return Challenge(scheme.lower(), params)


def find_credentials(
    registry: str, environ: Mapping[str, str], docker_config: Path | None = None
) -> Credentials | None:
    """Credentials for `registry` (normalised host), or None to go anonymous."""
    user = environ.get("GPUSHIP_REGISTRY_USER")
    password = environ.get("GPUSHIP_REGISTRY_PASSWORD")
    if user and password:
        return Credentials("GPUSHIP_REGISTRY_USER/GPUSHIP_REGISTRY_PASSWORD", user, password)
    token = environ.get("GITHUB_TOKEN")
    if registry == GHCR and token:
        # GHCR takes any username with a token; the actor name keeps its audit log readable.
        return Credentials("GITHUB_TOKEN", environ.get("GITHUB_ACTOR") or "x-access-token", token)
    return _docker_config_credentials(registry, environ, docker_config)


def _docker_config_credentials(
    registry: str, environ: Mapping[str, str], docker_config: Path | None
) -> Credentials | None:
    # Lazy: importing docker costs time, and most runs never need a credential lookup.
    import docker.auth

    config_path = docker_config
    if config_path is None and environ.get("DOCKER_CONFIG"):
        config_path = Path(environ["DOCKER_CONFIG"]) / "config.json"
    where = str(config_path) if config_path is not None else "~/.docker/config.json"
    try:
        config = docker.auth.load_config(
            config_path=str(config_path) if config_path is not None else None,
            credstore_env=dict(environ),
        )
        entry: dict[str, Any] | None = config.resolve_authconfig(
            None if registry == DOCKER_HUB else registry
        )
    except Exception as error:  # docker.auth raises assorted errors for broken files/helpers
        raise RegistryAuthError(
            f"cannot read registry credentials for {registry} from {where}: {error}",
            status=0,
        ) from None
    if not entry:
        return None
    identity = entry.get("IdentityToken")
    if identity:
        return Credentials(f"identity token in {where}", identity_token=str(identity))
    username = entry.get("Username") or entry.get("username")
    password = entry.get("Password") or entry.get("password")
    if username and password:
        return Credentials(where, str(username), str(password))
    return None


def scope_strings(access: Mapping[str, str]) -> list[str]:
    """`repository:<name>:<actions>` strings for a {repository name: "pull,push"} map."""
    return [f"repository:{name}:{actions}" for name, actions in sorted(access.items())]


@dataclass
class _Token:
    value: str
    expires_at: float


Fetch = Callable[..., requests.Response]


class Authenticator:
    """Answers registry challenges and caches what it learned per registry.

    `fetch(method, url, **kwargs)` is the client's retrying, timed HTTP call; token requests go
    through it so they get the same retries and timeouts as everything else.
    """

    def __init__(
        self,
        fetch: Fetch,
        environ: Mapping[str, str],
        docker_config: Path | None = None,
    ) -> None:
        self._fetch = fetch
        self._environ = environ
        self._docker_config = docker_config
        self._lock = threading.Lock()
        self._credentials: dict[str, Credentials | None] = {}
        self._challenges: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, tuple[str, ...]], _Token] = {}

    def credentials(self, registry: str) -> Credentials | None:
        """The credentials used for `registry` (looked up once)."""
        with self._lock:
            if registry not in self._credentials:
                self._credentials[registry] = find_credentials(
                    registry, self._environ, self._docker_config
                )
            return self._credentials[registry]

    def source(self, registry: str) -> str:
        """Where the credentials for `registry` came from, for messages."""
        found = self.credentials(registry)
        return found.source if found is not None else "no credentials (anonymous)"

    def header(self, registry: str, access: Mapping[str, str]) -> str | None:
        """An Authorization value to send up front, when this registry challenged before."""
        challenge = self._challenges.get(registry)
        if challenge is None:
            return None
        if challenge.scheme == "basic":
            found = self.credentials(registry)
            return found.basic_header() if found is not None else None
        if challenge.scheme == "bearer":
            return "Bearer " + self._token(registry, challenge, access, renew=False)
        return None

    def answer(self, registry: str, header: str, access: Mapping[str, str]) -> str:
        """The Authorization value to retry with after a 401 carrying `header`."""
        challenge = parse_challenge(header)
        self._challenges[registry] = challenge
        if challenge.scheme == "basic":
            found = self.credentials(registry)
            basic = found.basic_header() if found is not None else None
            if basic is None:
                raise RegistryAuthError(
                    f"registry {registry} needs a username and password; set "
                    "GPUSHIP_REGISTRY_USER/GPUSHIP_REGISTRY_PASSWORD or run `docker login`",
                    status=401,
                )
            return basic
        if challenge.scheme == "bearer":
            return "Bearer " + self._token(registry, challenge, access, renew=True)
        raise RegistryAuthError(
            f"registry {registry} asks for unsupported auth scheme {challenge.scheme!r}",
            status=401,
        )

    def _token(
        self, registry: str, challenge: Challenge, access: Mapping[str, str], *, renew: bool
    ) -> str:
        scopes = scope_strings(access)
        for extra in challenge.params.get("scope", "").split():
            if extra not in scopes:
                scopes.append(extra)
        key = (registry, tuple(scopes))
        cached = self._tokens.get(key)
        if cached is not None and not renew and cached.expires_at > time.monotonic():
            return cached.value
        token = self._request_token(registry, challenge, scopes)
        self._tokens[key] = token
        return token.value

    def _request_token(self, registry: str, challenge: Challenge, scopes: list[str]) -> _Token:
        realm = challenge.params.get("realm")
        if not realm:
            raise RegistryAuthError(
                f"registry {registry} sent a Bearer challenge without a realm", status=401
            )
        service = challenge.params.get("service")
        found = self.credentials(registry)
        if found is not None and found.identity_token is not None:
            form = {
                "grant_type": "refresh_token",
                "refresh_token": found.identity_token,
                "client_id": "gpuship",
                "scope": " ".join(scopes),
            }
            if service:
                form["service"] = service
            response = self._fetch("POST", realm, data=form)
        else:
            params: list[tuple[str, str]] = [("service", service)] if service else []
            params += [("scope", scope) for scope in scopes]
            headers = {}
            basic = found.basic_header() if found is not None else None
            if basic is not None:
                headers["Authorization"] = basic
            response = self._fetch("GET", realm, params=params, headers=headers)
        with response:
            if response.status_code != 200:
                raise RegistryAuthError(
                    f"token server {realm} refused a token for {registry} "
                    f"({' '.join(scopes) or 'no scope'}) with HTTP {response.status_code}; "
                    f"credentials: {self.source(registry)}",
                    status=response.status_code,
                )
            try:
                body = response.json()
            except ValueError:
                body = None
        value = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not isinstance(value, str) or not value:
            raise RegistryAuthError(
                f"token server {realm} answered without a token for {registry}", status=200
            )
        lifetime = body.get("expires_in") if isinstance(body, dict) else None
        seconds = (
            lifetime if isinstance(lifetime, int) and lifetime > 0 else DEFAULT_TOKEN_LIFETIME_S
        )
        expires_at = time.monotonic() + max(seconds - TOKEN_RENEW_MARGIN_S, 1)
        return _Token(value, expires_at)
