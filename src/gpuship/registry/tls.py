"""Which certificate authorities a registry's TLS certificate is checked against.

Given the way users give them to other tools:

- `REQUESTS_CA_BUNDLE`, `SSL_CERT_FILE` or `CURL_CA_BUNDLE` (in that order): a CA bundle that
  replaces the default one for every host, as it does for requests, curl and OpenSSL (the
  client reads them here, once: its session does not read the environment itself);
- Docker's per-registry directory `certs.d/<host[:port]>/*.crt` (dockerd reads
  `/etc/docker/certs.d`; `GPUSHIP_CERTS_DIR` points elsewhere): CAs added to the default ones for
  that registry only, as dockerd adds them (docs.docker.com/engine/security/certificates).

Verification is never turned off; a registry on plain HTTP is chosen by `registries.insecure`.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests
from requests.utils import DEFAULT_CA_BUNDLE_PATH
from urllib3.util.ssl_ import create_urllib3_context

from gpuship.errors import InputError, RegistryUnavailable
from gpuship.registry.watchdog import WatchedAdapter

CERTS_DIR_VAR = "GPUSHIP_CERTS_DIR"
DEFAULT_CERTS_DIR = Path("/etc/docker/certs.d")
BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")


class UntrustedCertificate(RegistryUnavailable):
    """The certificate of `host` does not verify against the CAs in force. Trying again
    cannot change that, so the request is not retried."""

    def __init__(self, message: str, *, host: str) -> None:
        super().__init__(message)
        self.host = host


def certificate_error(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure behind a requests/urllib3 error, if that is what
    it is (a peer that does not speak TLS, or a reset handshake, is something else)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        if seen.args and isinstance(seen.args[0], BaseException) and seen.args[0] is not seen:
            seen = seen.args[0]
        else:
            seen = seen.__cause__ or seen.__context__
    return None


def speaks_tls(host: str, port: int, timeout: float) -> bool:
    """Whether `host:port` answers a TLS handshake at all, certificate not looked at.

    The scheme probe asks this first so that a plain-HTTP registry costs no CA bundle load
    (30-50 ms of CPU); a host that does speak TLS is then probed with the certificate
    verified. A host that cannot be reached counts as not TLS, as the probe treats it.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no CAs loaded: nothing is verified
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host),
        ):
            return True
    except OSError:  # ssl.SSLError among them: the peer answered something that is not TLS
        return False


def _tunnels(proxy_url: str) -> bool:
    """Whether HTTPS through this proxy is a CONNECT tunnel whose TLS is the registry's own
    (a plain-HTTP proxy); an HTTPS or SOCKS proxy is set up by requests as it sees fit."""
    return proxy_url.lower().startswith("http://")


class _TrustAdapter(WatchedAdapter):
    """An adapter whose direct and tunnelled connections share one TLS context, its CAs loaded
    once, on the first HTTPS request (a plain-HTTP registry never loads them).

    requests hands urllib3 the CA bundle's path on every send (`cert_verify`), and urllib3
    loads it into each new connection's context: 30-50 ms of CPU per connection for the
    default bundle, eight times over when eight reads run at once (about 1.3 s of CPU for a
    route over 50 runners on a TLS registry). The shared context holds those CAs already, so
    the path is not passed on. A tunnel through a plain-HTTP proxy (CONNECT, how HTTPS_PROXY
    carries HTTPS) ends in TLS with the registry itself, so it uses the same context: the
    certs.d CAs are trusted there too, and loaded once. Through an HTTPS proxy requests' own
    way is kept.
    """

    def __init__(self, verify: str | bool, sources: tuple[str | Path, ...], system: bool) -> None:
        self._verify = verify  # the `verify=` the client sends with, which the CAs stand for
        self._sources = sources
        self._system = system
        self._loaded = False
        self._lock = threading.Lock()
        self._context = create_urllib3_context()
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        if _tunnels(proxy):
            proxy_kwargs.setdefault("ssl_context", self._context)
        return super().proxy_manager_for(proxy, **proxy_kwargs)

    def cert_verify(self, conn: Any, url: str, verify: bool | str, cert: Any) -> None:
        # (types-requests leaves cert_verify untyped)
        super().cert_verify(conn, url, verify, cert)  # type: ignore[no-untyped-call]
        direct_or_tunnelled = conn.proxy is None or _tunnels(conn.proxy.url)
        if url.lower().startswith("https") and verify == self._verify and direct_or_tunnelled:
            self._load()
            conn.ca_certs = conn.ca_cert_dir = None  # in the shared context already

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            if self._system:
                self._context.load_default_certs()
            for source in self._sources:
                try:
                    if Path(source).is_dir():
                        self._context.load_verify_locations(capath=str(source))
                    else:
                        self._context.load_verify_locations(cafile=str(source))
                except (OSError, ssl.SSLError) as error:
                    raise InputError(f"cannot load CA certificates {source}: {error}") from None
            self._loaded = True


class TlsTrust:
    """The CA settings of one client, read once from its environment."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._bundle: str | None = None
        for name in BUNDLE_VARS:
            value = environ.get(name)
            if value:
                if not Path(value).exists():
                    raise InputError(f"{name}={value}: no such CA bundle")
                self._bundle = value
                break
        self.certs_dir = Path(environ.get(CERTS_DIR_VAR) or DEFAULT_CERTS_DIR)

    def advice(self, host: str) -> str:
        """How to make `host`'s certificate trusted, for messages."""
        return f"give its CA as {self.certs_dir}/{host}/ca.crt or SSL_CERT_FILE"

    @property
    def verify(self) -> str | bool:
        """requests' `verify=`: the bundle from the environment, else the default CAs."""
        return self._bundle or True

    def mount(self, session: requests.Session) -> None:
        """Mount the adapters that check certificates: one for every host, trusting the bundle
        (else requests' default CAs), and one for every `certs.d/<host[:port]>/` holding
        `*.crt` files, trusting the system's CAs and the bundle's and those too, as dockerd
        adds them. Done once, up front: mounting while blob copies run in threads would change
        the session's adapter table under them."""
        default = self._bundle or DEFAULT_CA_BUNDLE_PATH
        session.mount("https://", _TrustAdapter(self.verify, (default,), system=False))
        try:
            directories = sorted(p for p in self.certs_dir.iterdir() if p.is_dir())
        except OSError:  # no certs.d at all is the common case
            return
        for directory in directories:
            ca_files = sorted(directory.glob("*.crt"))
            if ca_files:
                adapter = _TrustAdapter(self.verify, (default, *ca_files), system=True)
                session.mount(f"https://{directory.name}/", adapter)
