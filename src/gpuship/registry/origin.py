"""Origins (scheme, host, port): the unit a credential, a redirect and a token realm are judged by.

Two URLs share an origin when scheme, host and port are equal, the port defaulting by scheme
(RFC 6454). Docker's config.json keys credentials by `host[:port]`, so a registry on another port
of the same machine is another registry; gpuship treats it the same way.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from gpuship.errors import InputError

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """Where a request goes: `https`, `ghcr.io`, 443."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an absolute http(s) URL; InputError for anything else."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise InputError(f"{url!r} is not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise InputError(f"{url!r} is not an http(s) URL")
        return cls(scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme])

    @property
    def netloc(self) -> str:
        """`host:port` as registries are named (no port when it is the scheme's default)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}"


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def may_carry_credentials(origin: Origin, insecure: Sequence[str]) -> bool:
    """True when a credential may travel over this origin: HTTPS always; plain HTTP only to a
    loopback host or a host listed in `registries.insecure` (by `host` or `host:port`)."""
    if origin.scheme == "https":
        return True
    return is_loopback(origin.host) or origin.netloc in insecure or origin.host in insecure
