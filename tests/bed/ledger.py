"""Which credential reached which host: the bed's credential-leak check.

Every service of the registry topology (registries behind recording proxies, the token service,
blob storage) reports each `Authorization` header it receives. The ledger knows each bed
credential and the hosts it belongs to, and every token the token service issued and the
registry it was issued for, so it can tell whether a header reached a host it does not belong
to. A header it cannot attribute at all counts as a leak too: in the bed every secret is known.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BedCredential:
    """A username/password of the bed and the hosts (`127.0.0.1:PORT`) it may be presented to."""

    name: str
    username: str
    password: str
    hosts: frozenset[str]


@dataclass
class CredentialLedger:
    """Credentials, issued tokens, and every (host, Authorization) seen; thread-safe."""

    credentials: list[BedCredential] = field(default_factory=list)
    # token -> the registry host it was issued for
    tokens: dict[str, str] = field(default_factory=dict)
    # (host, what was presented: credential name, "token for HOST", or "unknown ..."), in order
    events: list[tuple[str, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add_credential(self, credential: BedCredential) -> None:
        with self._lock:
            self.credentials.append(credential)

    def issued(self, token: str, registry_host: str) -> None:
        """The token service issued `token` for `registry_host`."""
        with self._lock:
            self.tokens[token] = registry_host

    def record(self, host: str, authorization: str | None) -> None:
        """`host` received `authorization` (None: an anonymous request)."""
        if not authorization:
            return
        what, allowed = self._attribute(authorization)
        with self._lock:
            self.events.append((host, what))
            if host not in allowed:
                self.violations.append(f"{what} was presented to {host}")

    def mark(self) -> int:
        """A point in the record, for `presented(host, since=...)`."""
        with self._lock:
            return len(self.events)

    def presented(self, host: str, since: int = 0) -> set[str]:
        """What was presented to `host` (credential names, `token for HOST`) since `since`."""
        with self._lock:
            return {what for (where, what) in self.events[since:] if where == host}

    def _attribute(self, authorization: str) -> tuple[str, frozenset[str]]:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "basic":
            try:
                username, _, password = base64.b64decode(value).decode().partition(":")
            except ValueError:
                return "an undecodable Basic header", frozenset()
            for credential in self.credentials:
                if credential.username == username:
                    # A wrong password for a bed user is still that user's to send.
                    wrong = "" if credential.password == password else " (wrong password)"
                    return credential.name + wrong, credential.hosts
            return f"an unknown Basic credential for user {username!r}", frozenset()
        if scheme.lower() == "bearer":
            with self._lock:
                registry = self.tokens.get(value)
            if registry is None:
                return "an unknown Bearer token", frozenset()
            return f"token for {registry}", frozenset({registry})
        return f"an unknown {scheme} authorization", frozenset()
