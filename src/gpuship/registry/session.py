"""One command's HTTP to registries, under the registry API's rules: the part of the client
every request goes through (`RegistryClient` in client.py is the whole client).

Per host it picks the scheme (HTTPS; plain HTTP only for loopback and `registries.insecure`
hosts that do not speak TLS), trusts the CAs and takes the proxies the environment names, and
sends the credential that belongs to the host. Where a credential may go is decided in three
places: `_request` here (only to the registry's own origin), `redirects.py` (never across
origins on a redirect) and `auth.py` (which token realms get it; `credentials.py` finds it).
An answer the request did not expect becomes a typed error (`_error_for`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from gpuship import __version__
from gpuship.documents import load_json
from gpuship.errors import GpushipError, InputError, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.redaction import redact_credentials
from gpuship.reference import Repository
from gpuship.registry.auth import Authenticator
from gpuship.registry.deadline import Deadline
from gpuship.registry.errors import NotFound, RegistryAuthError, RegistryRequestError
from gpuship.registry.origin import Origin
from gpuship.registry.redirects import follow_redirects
from gpuship.registry.retry import RetryPolicy
from gpuship.registry.tls import TlsTrust, UntrustedCertificate, certificate_error, speaks_tls
from gpuship.registry.transport import Transport, uses_plain_http

# The actions a request's token scope asks for (`repository:<name>:<actions>`, auth.py).
PULL = "pull"
PUSH = "pull,push"
DELETE = "delete"
_ERROR_BODY_LIMIT = 300


class RegistrySession:
    """The requests under every part of the client, to any number of registries; one per
    command run, as a RegistryClient."""

    def __init__(
        self,
        *,
        insecure: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        docker_config: Path | None = None,
        session: requests.Session | None = None,
        deadline: Deadline | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._insecure = tuple(insecure)
        self._schemes: dict[str, str] = {}
        self._lock = threading.Lock()
        environ = os.environ if environ is None else environ
        self._session = session or requests.Session()
        self._session.headers["User-Agent"] = f"gpuship/{__version__}"
        # The environment is read here, once: requests with trust_env would scan it again on
        # every request for proxies (about a fifth of a manifest GET's CPU) and add ~/.netrc
        # credentials to any host. CAs come from TlsTrust, proxies from `_proxies`.
        self._session.trust_env = False
        self._proxies_by_origin: dict[str, dict[str, str]] = {}
        self._tls = TlsTrust(environ)
        self.limits = limits
        self._transport = Transport(
            self._session, retry or RetryPolicy(), deadline=deadline, limits=self.limits
        )
        self._tls.mount(self._session)  # after the transport's: replaces its https:// adapter
        self._auth = Authenticator(self._send, environ, docker_config, self._insecure)

    @property
    def deadline(self) -> Deadline:
        """The deadline every request of this client runs under."""
        return self._transport.deadline

    def close(self) -> None:
        """Release pooled connections."""
        self._transport.close()
        self._session.close()

    def ping(self, registry: str) -> None:
        """GET /v2/ (authenticating if asked): fails if the registry is not reachable or usable."""
        probe = Repository(registry, "")
        self._request("GET", probe, "/v2/", access={}, ok=(200,)).close()

    def base_url(self, repository: Repository) -> str:
        """`http(s)://host` serving the API for the repository's registry."""
        return f"{self._scheme(repository.api_host)}://{repository.api_host}"

    def _scheme(self, host: str) -> str:
        """HTTPS, except for loopback and `registries.insecure` hosts that do not speak TLS.

        Those are tried over HTTPS first (certificate verified) and fall back to plain HTTP
        only when the host answers TLS with something that is not TLS, as Docker does for
        insecure registries (moby `daemon/pkg/registry/service.go` lookupV2Endpoints) except
        that verification is never skipped: an untrusted certificate is an error.
        """
        if not uses_plain_http(host, self._insecure):
            return "https"
        with self._lock:
            if host not in self._schemes:
                self._schemes[host] = self._probe_tls(host)
            return self._schemes[host]

    def _probe_tls(self, host: str) -> str:
        url = f"https://{host}/v2/"
        proxies = self._proxies(url)
        if not proxies and not self._may_speak_tls(Origin.of(url)):
            return "http"
        try:
            self._transport.probe(
                "GET", url, verify=self._tls.verify, allow_redirects=False, proxies=proxies
            ).close()
        except requests.exceptions.SSLError as error:
            if certificate_error(error) is not None:
                raise RegistryUnavailable(
                    f"registry {host} serves HTTPS with a certificate that is not trusted; "
                    f"{self._tls.advice(host)}"
                ) from None
            return "http"
        except requests.RequestException:
            return "http"
        return "https"

    def _may_speak_tls(self, origin: Origin) -> bool:
        """False when a direct handshake shows the host does not speak TLS (a plain-HTTP
        registry then costs no CA bundle load); True when it does, or when time is up (the
        probe proper then reports the deadline)."""
        retry, left = self._transport.retry, self._transport.deadline.remaining()
        timeout = min(retry.connect_timeout_s, retry.timeout_s, left)
        return timeout <= 0 or speaks_tls(origin.host, origin.port, timeout)

    def _request(
        self,
        method: str,
        repository: Repository,
        path: str,
        *,
        access: Mapping[str, str],
        ok: Sequence[int],
        **kwargs: Any,
    ) -> requests.Response:
        """Send with auth; return responses whose status is in `ok`, raise typed errors else.

        The registry's credential (or token) goes only to the registry's own origin: not to an
        upload `Location` on another host, not along a redirect to blob storage.
        """
        base = self.base_url(repository)
        url = path if path.startswith(("http://", "https://")) else base + path
        registry = repository.registry
        home = Origin.of(base)
        headers: dict[str, str] = dict(kwargs.pop("headers", None) or {})
        at_home = Origin.of(url) == home
        authorization = self._auth.header(registry, home, access) if at_home else None
        if authorization is not None:
            headers["Authorization"] = authorization
        response = self._send(method, url, headers=headers, home=home, **kwargs)
        if at_home and response.status_code == 401 and "WWW-Authenticate" in response.headers:
            challenge = response.headers["WWW-Authenticate"]
            response.close()
            headers["Authorization"] = self._auth.answer(registry, home, challenge, access)
            response = self._send(method, url, headers=headers, home=home, **kwargs)
        if response.status_code in ok:
            return response
        raise self._error_for(method, repository, path, access, response)

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        home: Origin | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """One request with redirects followed by hand (`follow_redirects`), verifying TLS
        against the CAs the environment names."""
        kwargs.setdefault("verify", self._tls.verify)
        try:
            if kwargs.pop("allow_redirects", True) is False:
                return self._hop(
                    method, url, headers=dict(headers or {}), allow_redirects=False, **kwargs
                )
            return follow_redirects(
                self._hop, method, url, dict(headers or {}), home=home, **kwargs
            )
        except UntrustedCertificate as error:  # here the advice can name the CA settings
            advice = self._tls.advice(error.host)
            raise UntrustedCertificate(f"{error}; {advice}", host=error.host) from None

    def _hop(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        """One request to `url` through the proxy the environment names for its origin (a
        redirect to blob storage may take another)."""
        return self._transport.send(method, url, proxies=self._proxies(url), **kwargs)

    def _proxies(self, url: str) -> dict[str, str]:
        """The proxies HTTP(S)_PROXY, ALL_PROXY and NO_PROXY give for `url`, as requests picks
        them (its own lookup, on the process environment as before), once per origin."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}/"
        if origin not in self._proxies_by_origin:  # a race only computes the same value twice
            self._proxies_by_origin[origin] = requests.utils.get_environ_proxies(origin)
        return self._proxies_by_origin[origin]

    def _error_for(
        self,
        method: str,
        repository: Repository,
        path: str,
        access: Mapping[str, str],
        response: requests.Response,
    ) -> GpushipError:
        """The typed error for a response that is not what the request expects."""
        status = response.status_code
        codes, text = _error_codes(response)
        response.close()
        what = f"{method} {repository.registry}{_path_only(path)}"
        if status >= 500 or status in (408, 429):
            return RegistryUnavailable(
                f"registry {repository.registry} answered HTTP {status} to {what} after retries"
                + (f": {text}" if text else "")
            )
        if status in (401, 403):
            wanted = ", ".join(f"{name} ({actions})" for name, actions in access.items())
            return RegistryAuthError(
                f"registry {repository.registry} denied {what} (HTTP {status}) needing "
                f"{wanted or 'access'} with {self._auth.source(repository.registry)}"
                + (f": {text}" if text else ""),
                status=status,
                codes=codes,
            )
        if status == 404:
            return NotFound(
                f"{what}: not found (HTTP 404)" + (f": {text}" if text else ""),
                status=status,
                codes=codes,
            )
        return RegistryRequestError(
            f"registry {repository.registry} refused {what} with HTTP {status}"
            + (f": {text}" if text else ""),
            status=status,
            codes=codes,
        )


def _error_codes(response: requests.Response) -> tuple[tuple[str, ...], str]:
    """OCI error codes and a short text from an error body (which may not be JSON at all), on
    one line: a body's line breaks would start lines of their own in a message. Credentials
    the body quotes (a WAF or proxy echoing the request's `Authorization`) are hidden before
    the text is cut, so a cut cannot leave part of one."""
    codes, text = _error_body(response)
    return codes, redact_credentials(" ".join(text.split()))[:_ERROR_BODY_LIMIT]


def _error_body(response: requests.Response) -> tuple[tuple[str, ...], str]:
    text = response.text if response.content else ""
    try:
        body = (
            load_json(response.content, "error body", DEFAULT_LIMITS) if response.content else None
        )
    except InputError:
        return (), text
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, list):
        return (), text
    codes = tuple(str(e.get("code", "")) for e in errors if isinstance(e, dict))
    messages = "; ".join(
        f"{e.get('code', '')}: {e.get('message', '')}" for e in errors if isinstance(e, dict)
    )
    return codes, messages or text


def _path_only(path: str) -> str:
    """The path of a request for messages: no scheme/host, no query (upload state, scopes)."""
    without_query = path.split("?", 1)[0]
    if without_query.startswith(("http://", "https://")):
        return "/" + without_query.split("/", 3)[-1]
    return without_query
