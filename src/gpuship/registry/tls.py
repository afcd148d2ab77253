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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests

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


class _ExtraCaAdapter(WatchedAdapter):
    """An adapter whose TLS context trusts the default CAs plus a registry's own (its
    connections watched like every other's: `watchdog.py`)."""

    def __init__(self, ca_files: list[Path]) -> None:
        self._context = ssl.create_default_context()
        for ca_file in ca_files:
            try:
                self._context.load_verify_locations(cafile=str(ca_file))
            except (OSError, ssl.SSLError) as error:
                raise InputError(f"cannot load CA certificate {ca_file}: {error}") from None
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)


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
        """Mount, for every `certs.d/<host[:port]>/` holding `*.crt` files, an adapter that also
        trusts those CAs. Done once, up front: mounting while blob copies run in threads would
        change the session's adapter table under them."""
        try:
            directories = sorted(p for p in self.certs_dir.iterdir() if p.is_dir())
        except OSError:  # no certs.d at all is the common case
            return
        for directory in directories:
            ca_files = sorted(directory.glob("*.crt"))
            if ca_files:
                session.mount(f"https://{directory.name}/", _ExtraCaAdapter(ca_files))
