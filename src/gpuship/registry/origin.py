"""Origins (scheme, host, port): the unit a credential, a redirect and a token realm are judged by.

Two URLs share an origin when scheme, host and port are equal, the port defaulting by scheme
(RFC 6454). Docker's config.json keys credentials by `host[:port]`, so a registry on another port
of the same machine is another registry; gpuship treats it the same way.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from gpuship.errors import InputError, RegistryUnavailable
from gpuship.redaction import shown

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


def header_url(base: str, value: str, header: str) -> str:
    """The URL a registry's `Location` or `Link` header names, resolved against `base`, the URL
    it answered; RegistryUnavailable (exit 3) naming the header when no URL parser takes it
    (`http://[::1`, a port past 65535): a registry's answer, not the user's input."""
    try:
        target = urljoin(base, value)
        _ = urlsplit(target).port  # reads the port, which is where a bad one shows
    except ValueError:
        raise RegistryUnavailable(
            f"{base.split('?', 1)[0]} answered a {header} header that is not a URL: {shown(value)}"
        ) from None
    return target


def next_page(page: str, link: str, read: set[str], what: str) -> str:
    """The URL a `Link: rel="next"` names, resolved against `page` (the URL that answered);
    RegistryUnavailable (exit 3) when it is one of `read`, the pages already read: a registry
    that links back would be listed forever (and a list kept growing)."""
    target = header_url(page, link, "Link")
    if target in read:
        raise RegistryUnavailable(
            f"{what} links back to a page already read, {shown(target)}: not followed"
        )
    return target


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_internal(host: str) -> bool:
    """True for a host not on the public internet: `localhost` (and `*.localhost`, RFC 6761),
    or an address that is loopback, private, link-local (169.254.169.254, a cloud's metadata
    service), shared, reserved or unspecified, in every numeric spelling a connection takes
    (`2852039166`, `0xa9.0xfe.0xa9.0xfe`, `::ffff:169.254.169.254`: read as the C library reads
    it, with no DNS). Other names are not resolved: one that points inside is not seen."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        found = socket.getaddrinfo(name, None, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return False  # a name, not an address
    return any(not _is_global(str(entry[4][0])) for entry in found)


def _is_global(text: str) -> bool:
    address = ipaddress.ip_address(text.partition("%")[0])
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_global


def may_carry_credentials(origin: Origin, insecure: Sequence[str]) -> bool:
    """True when a credential may travel over this origin: HTTPS always; plain HTTP only to a
    loopback host or a host listed in `registries.insecure` (by `host` or `host:port`)."""
    if origin.scheme == "https":
        return True
    return is_loopback(origin.host) or origin.netloc in insecure or origin.host in insecure
