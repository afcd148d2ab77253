"""The 401 challenge flow (Basic, and Bearer tokens with scopes), with each credential kept to
the hosts it belongs to.

Credentials come from `gpuship.registry.credentials`, one per registry host. The token flow is
distribution's `docs/spec/auth/token.md` (GET with repeated `scope=`) and, for identity tokens,
`docs/spec/auth/oauth.md` (POST refresh_token).

Where a registry's credential may go (the realm rule):

- to the registry itself, and to a token realm on the registry's own host and port;
- to a realm on another host only when that host is named as this registry's token service:
  by the credential (`token-services` in GPUSHIP_REGISTRY_AUTH, GPUSHIP_REGISTRY_TOKEN_SERVICE)
  or by the short list of public registries known to use one (`KNOWN_TOKEN_SERVICES`);
- never over plain HTTP, except to loopback hosts and hosts listed in `registries.insecure`.

Any other realm is asked for an anonymous token; if the registry then refuses, the error says
the credential was withheld and how to name the token service. A realm on an internal address
(`realm_address_verdict`: loopback, private, link-local) is not asked at all unless it is on the
registry's own host or named as its token service. This is stricter than Docker
(moby `daemon/pkg/registry/auth.go` `staticCredentialStore.Basic` ignores the realm URL, so the
credential goes to whatever realm the registry names) and than crane (go-containerregistry
`pkg/v1/remote/transport/bearer.go` `validateRealmURL`: the realm must be HTTPS unless the
registry is insecure and may not be a private or loopback IP unless it is the registry's own
host:port, but any public host gets the credential). A registry that is compromised, or
answers a typo'd host, can therefore not collect a credential by naming a realm of its own.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from gpuship.documents import load_json
from gpuship.errors import InputError, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS
from gpuship.redaction import hold, shown
from gpuship.registry.credentials import KNOWN_TOKEN_SERVICES, Credentials, CredentialStore
from gpuship.registry.errors import RegistryAuthError
from gpuship.registry.origin import Origin, is_internal, is_loopback, may_carry_credentials
from gpuship.registry.transport import document_of

# token.md: "expires_in ... defaults to 60 seconds"; renew a little early so a slow request
# started on an almost-expired token does not fail.
DEFAULT_TOKEN_LIFETIME_S = 60
TOKEN_RENEW_MARGIN_S = 10
_PARAM_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


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


def scope_strings(access: Mapping[str, str]) -> list[str]:
    """`repository:<name>:<actions>` strings for a {repository name: "pull,push"} map."""
    return [f"repository:{name}:{actions}" for name, actions in sorted(access.items())]


def realm_verdict(
    realm: Origin, registry: Origin, found: Credentials, insecure: Sequence[str]
) -> str | None:
    """None when `found` may be sent to `realm`, else why not (for the error message)."""
    if not may_carry_credentials(realm, insecure):
        return f"the token service {realm} is plain HTTP on a host that is not loopback or insecure"
    if (realm.host, realm.port) == (registry.host, registry.port):
        return None
    trusted = (*found.token_services, *map(Origin.of, KNOWN_TOKEN_SERVICES.get(found.registry, ())))
    if realm in trusted:
        return None
    return (
        f"its token service {realm} is on another host, so the credential for {found.registry} "
        f"({found.source}) was not sent there; if it is this registry's token service, name it "
        "in `token-services` of GPUSHIP_REGISTRY_AUTH or in GPUSHIP_REGISTRY_TOKEN_SERVICE"
    )


def realm_address_verdict(realm: Origin, registry: Origin, named: Sequence[Origin]) -> str | None:
    """None when gpuship may ask `realm` for a token at all, else why not (for the message).

    A realm on an internal address (`is_internal`) is asked only when it is on the registry's
    own host (any port: a registry on localhost with its token service on another port; two
    loopback names are one machine) or named as the registry's token service. Otherwise a
    registry, or what answers in its place, could make gpuship fetch a runner's metadata
    service (169.254.169.254) or a sidecar, and hand the answer back as a Bearer token.
    """
    if not is_internal(realm.host) or realm in named:
        return None
    if realm.host == registry.host or (is_loopback(realm.host) and is_loopback(registry.host)):
        return None
    return (
        f"its token realm {realm} is on an internal address other than the registry's own "
        "host, so gpuship did not fetch it; if it is this registry's token service, name it "
        "in `token-services` of GPUSHIP_REGISTRY_AUTH or in GPUSHIP_REGISTRY_TOKEN_SERVICE"
    )


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
        insecure: Sequence[str] = (),
    ) -> None:
        self._fetch = fetch
        self._store = CredentialStore(environ, docker_config)
        self._insecure = tuple(insecure)
        self._lock = threading.Lock()
        self._credentials: dict[str, Credentials | None] = {}
        self._challenges: dict[str, Challenge] = {}
        self._tokens: dict[tuple[str, tuple[str, ...]], _Token] = {}
        self._withheld: dict[str, str] = {}

    def credentials(self, registry: str) -> Credentials | None:
        """The credentials used for `registry` (looked up once)."""
        with self._lock:
            if registry not in self._credentials:
                self._credentials[registry] = self._store.find(registry)
            return self._credentials[registry]

    def source(self, registry: str) -> str:
        """Where the credentials for `registry` came from, for messages; says so when they were
        withheld from a token service."""
        found = self.credentials(registry)
        text = found.source if found is not None else "no credentials (anonymous)"
        withheld = self._withheld.get(registry)
        return f"{text}; {withheld}" if withheld else text

    def header(self, registry: str, origin: Origin, access: Mapping[str, str]) -> str | None:
        """An Authorization value to send up front, when this registry challenged before."""
        challenge = self._challenges.get(registry)
        if challenge is None:
            return None
        if challenge.scheme == "basic":
            return self._basic(registry, origin, required=False)
        if challenge.scheme == "bearer":
            return "Bearer " + self._token(registry, origin, challenge, access, renew=False)
        return None

    def answer(self, registry: str, origin: Origin, header: str, access: Mapping[str, str]) -> str:
        """The Authorization value to retry with after a 401 carrying `header`."""
        challenge = parse_challenge(header)
        self._challenges[registry] = challenge
        if challenge.scheme == "basic":
            basic = self._basic(registry, origin, required=True)
            assert basic is not None
            return basic
        if challenge.scheme == "bearer":
            return "Bearer " + self._token(registry, origin, challenge, access, renew=True)
        raise RegistryAuthError(
            f"registry {registry} asks for unsupported auth scheme {challenge.scheme!r}",
            status=401,
        )

    def _basic(self, registry: str, origin: Origin, *, required: bool) -> str | None:
        found = self.credentials(registry)
        basic = found.basic_header() if found is not None else None
        if basic is not None and not may_carry_credentials(origin, self._insecure):
            raise RegistryAuthError(
                f"registry {registry} asks for a password over plain HTTP; gpuship sends "
                "credentials over HTTP only to loopback hosts and `registries.insecure`",
                status=401,
            )
        if basic is None and required:
            raise RegistryAuthError(
                f"registry {registry} needs a username and password; set GPUSHIP_REGISTRY="
                f"{registry} with GPUSHIP_REGISTRY_USER/GPUSHIP_REGISTRY_PASSWORD, or run "
                "`docker login`",
                status=401,
            )
        return basic

    def _token(
        self,
        registry: str,
        origin: Origin,
        challenge: Challenge,
        access: Mapping[str, str],
        *,
        renew: bool,
    ) -> str:
        scopes = scope_strings(access)
        for extra in challenge.params.get("scope", "").split():
            if extra not in scopes:
                scopes.append(extra)
        key = (registry, tuple(scopes))
        cached = self._tokens.get(key)
        if cached is not None and not renew and cached.expires_at > time.monotonic():
            return cached.value
        token = self._request_token(registry, origin, challenge, scopes)
        self._tokens[key] = token
        return token.value

    def _realm(self, registry: str, origin: Origin, realm: str) -> Origin:
        """The origin of the token realm `registry` named, once it may be asked at all;
        RegistryUnavailable (exit 3) for a realm that is no http(s) URL or that sits on
        another internal address (`realm_address_verdict`)."""
        try:
            realm_origin = Origin.of(realm)
        except InputError:
            raise RegistryUnavailable(
                f"registry {registry} sent a WWW-Authenticate header whose token realm "
                f"{shown(realm)} is not an http(s) URL"
            ) from None
        found = self.credentials(registry)
        named = (
            *self._store.token_services(registry),
            *(found.token_services if found is not None else ()),
            *map(Origin.of, KNOWN_TOKEN_SERVICES.get(registry, ())),
        )
        reason = realm_address_verdict(realm_origin, origin, named)
        if reason is not None:
            raise RegistryUnavailable(f"registry {registry} asks for a token: {reason}")
        return realm_origin

    def _offered(self, registry: str, origin: Origin, realm: Origin) -> Credentials | None:
        """The credential to present to `realm`, or None (anonymous) with the reason kept."""
        found = self.credentials(registry)
        if found is None:
            return None
        reason = realm_verdict(realm, origin, found, self._insecure)
        if reason is None:
            self._withheld.pop(registry, None)
            return found
        self._withheld[registry] = reason
        return None

    def _request_token(
        self, registry: str, origin: Origin, challenge: Challenge, scopes: list[str]
    ) -> _Token:
        realm = challenge.params.get("realm")
        if not realm:
            raise RegistryAuthError(
                f"registry {registry} sent a Bearer challenge without a realm", status=401
            )
        service = challenge.params.get("service")
        found = self._offered(registry, origin, self._realm(registry, origin, realm))
        # Token requests never follow redirects: the credential would go along to wherever
        # the token service points.
        if found is not None and found.identity_token is not None:
            form = {
                "grant_type": "refresh_token",
                "refresh_token": found.identity_token,
                "client_id": "gpuship",
                "scope": " ".join(scopes),
            }
            if service:
                form["service"] = service
            response = self._fetch("POST", realm, data=form, allow_redirects=False)
        else:
            params: list[tuple[str, str]] = [("service", service)] if service else []
            params += [("scope", scope) for scope in scopes]
            headers = {}
            basic = found.basic_header() if found is not None else None
            if basic is not None:
                headers["Authorization"] = basic
            response = self._fetch(
                "GET", realm, params=params, headers=headers, allow_redirects=False
            )
        return self._read_token(registry, realm, scopes, response)

    def _read_token(
        self, registry: str, realm: str, scopes: list[str], response: requests.Response
    ) -> _Token:
        with response:
            if response.is_redirect:
                raise RegistryAuthError(
                    f"token server {realm} redirected the token request for {registry}; "
                    "gpuship does not follow token-service redirects",
                    status=response.status_code,
                )
            if response.status_code != 200:
                raise RegistryAuthError(
                    f"token server {realm} refused a token for {registry} "
                    f"({' '.join(scopes) or 'no scope'}) with HTTP {response.status_code}; "
                    f"credentials: {self.source(registry)}",
                    status=response.status_code,
                )
            try:
                with document_of(response) as data:  # empty or cut short: RegistryUnavailable
                    body = load_json(data, f"token answer from {realm}", DEFAULT_LIMITS)
            except InputError:
                body = None
        value = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
        if not isinstance(value, str) or not value:
            raise RegistryAuthError(
                f"token server {realm} answered without a token for {registry}", status=200
            )
        hold(value)  # before it goes to the registry as `Bearer …`
        lifetime = body.get("expires_in") if isinstance(body, dict) else None
        seconds = (
            lifetime if isinstance(lifetime, int) and lifetime > 0 else DEFAULT_TOKEN_LIFETIME_S
        )
        expires_at = time.monotonic() + max(seconds - TOKEN_RENEW_MARGIN_S, 1)
        return _Token(value, expires_at)
