"""The registry topology a platform team has, on loopback: every registry reached through its
recording proxy, every credential watched by one ledger.

- `push`: token auth, a 401 `Bearer realm=` pointing at the token service on another port,
  blob downloads redirected to storage on a third port; plain HTTP; credential `releaser`.
- `basic`: htpasswd basic auth; plain HTTP; credential `gpuship`.
- `tls`: htpasswd basic auth; HTTPS with a certificate from the bed CA; credential `tls-user`.
- `public`: no auth, read-only (writes answer 405): where bases come from; no credential.

A credential belongs to its registry's proxy host (and, for `push`, to the token service); the
ledger flags any other host it reaches. `environ()` is what a user would set: one explicit
credential per registry (GPUSHIP_REGISTRY_AUTH, the token service named for `push`) and the
CA given as Docker's `certs.d` (or `SSL_CERT_FILE`).
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bed.ledger import BedCredential, CredentialLedger
from bed.pki import CertificateAuthority, TokenSigner
from bed.recorder import BlobStorage, RecordingProxy, run_proxy, run_storage
from bed.registry import Registry, run_registry
from bed.tokenauth import ISSUER, TokenService, run_token_service, token_auth_config

PUSH_USER, PUSH_PASSWORD = "releaser", "token-bed-secret"
BASIC_USER, BASIC_PASSWORD = "gpuship", "bed-secret-0"
TLS_USER, TLS_PASSWORD = "tls-user", "tls-bed-secret"


@dataclass(frozen=True)
class TopologyRegistry:
    """A registry as clients see it: `host` and `url` are its recording proxy's."""

    name: str
    proxy: RecordingProxy
    upstream: Registry
    username: str | None = None
    password: str | None = None
    token_service: TokenService | None = None

    @property
    def host(self) -> str:
        return self.proxy.host

    @property
    def url(self) -> str:
        return self.proxy.url

    @property
    def issuer(self) -> TokenService:
        """The token service of a token-auth registry."""
        assert self.token_service is not None, f"{self.name} has no token service"
        return self.token_service

    @property
    def auth(self) -> tuple[str, str] | None:
        if self.username is None or self.password is None:
            return None
        return (self.username, self.password)

    def ref(self, repository: str, tag_or_digest: str = "latest") -> str:
        separator = "@" if tag_or_digest.startswith("sha256:") else ":"
        return f"{self.host}/{repository}{separator}{tag_or_digest}"

    def auth_entry(self) -> dict[str, object]:
        """This registry's entry of GPUSHIP_REGISTRY_AUTH."""
        if self.username is None or self.password is None:
            return {}
        entry: dict[str, object] = {"username": self.username, "password": self.password}
        if self.token_service is not None:
            entry["token-services"] = [self.token_service.realm]
        return entry

    def credential_env(self) -> dict[str, str]:
        """The single-credential form: GPUSHIP_REGISTRY and its user, password, token service."""
        if self.username is None or self.password is None:
            return {}
        env = {
            "GPUSHIP_REGISTRY": self.host,
            "GPUSHIP_REGISTRY_USER": self.username,
            "GPUSHIP_REGISTRY_PASSWORD": self.password,
        }
        if self.token_service is not None:
            env["GPUSHIP_REGISTRY_TOKEN_SERVICE"] = self.token_service.realm
        return env

    def docker_auth(self) -> str:
        """config.json's `auth` value for this registry's credential."""
        return base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


@dataclass(frozen=True)
class RegistryTopology:
    """Everything started, and the ledger that watches it."""

    ledger: CredentialLedger
    ca: CertificateAuthority
    certs_dir: Path
    storage: BlobStorage
    push: TopologyRegistry
    basic: TopologyRegistry
    tls: TopologyRegistry
    public: TopologyRegistry

    @property
    def registries(self) -> tuple[TopologyRegistry, ...]:
        return (self.push, self.basic, self.tls, self.public)

    def environ(self, *, ca: str = "certs.d") -> dict[str, str]:
        """One explicit credential per registry, and the CA as `certs.d` or `SSL_CERT_FILE`."""
        auth = {r.host: r.auth_entry() for r in self.registries if r.username is not None}
        env = {
            "GPUSHIP_REGISTRY_AUTH": json.dumps(auth),
            "DOCKER_CONFIG": str(self.certs_dir.parent / "no-docker-config"),
        }
        if ca == "certs.d":
            env["GPUSHIP_CERTS_DIR"] = str(self.certs_dir)
        else:
            env["SSL_CERT_FILE"] = str(self.ca.cert_path)
        return env

    def violations(self) -> list[str]:
        return list(self.ledger.violations)


@contextlib.contextmanager
def run_topology(root: Path, basic_upstream: Registry) -> Iterator[RegistryTopology]:
    """Start the token service, the registries and their proxies under `root`."""
    ledger = CredentialLedger()
    ca = CertificateAuthority(root / "ca")
    signer = TokenSigner(root / "token", ISSUER)
    service = TokenService(signer, {PUSH_USER: PUSH_PASSWORD}, ledger)
    with contextlib.ExitStack() as stack:
        stack.enter_context(run_token_service(service))
        storage = stack.enter_context(run_storage(BlobStorage(ledger)))
        push_upstream = stack.enter_context(
            run_registry(root / "push", auth=token_auth_config(service))
        )
        tls_upstream = stack.enter_context(run_registry(root / "tls", TLS_USER, TLS_PASSWORD))
        public_upstream = stack.enter_context(run_registry(root / "public"))
        push_proxy = stack.enter_context(
            run_proxy(RecordingProxy(push_upstream.host, ledger, storage=storage))
        )
        service.registry_host = push_proxy.host
        basic_proxy = stack.enter_context(run_proxy(RecordingProxy(basic_upstream.host, ledger)))
        tls_proxy = stack.enter_context(
            run_proxy(RecordingProxy(tls_upstream.host, ledger, tls=ca.server_cert("tls-registry")))
        )
        public_proxy = stack.enter_context(
            run_proxy(RecordingProxy(public_upstream.host, ledger, read_only=True))
        )
        ledger.add_credential(
            BedCredential(
                "the push registry's credential",
                PUSH_USER,
                PUSH_PASSWORD,
                frozenset({push_proxy.host, service.host}),
            )
        )
        assert (basic_upstream.username, basic_upstream.password) == (BASIC_USER, BASIC_PASSWORD)
        ledger.add_credential(
            BedCredential(
                "the basic-auth registry's credential",
                BASIC_USER,
                BASIC_PASSWORD,
                frozenset({basic_proxy.host}),
            )
        )
        ledger.add_credential(
            BedCredential(
                "the TLS registry's credential", TLS_USER, TLS_PASSWORD, frozenset({tls_proxy.host})
            )
        )
        certs_dir = ca.trusted_in(root / "certs.d", tls_proxy.host)
        yield RegistryTopology(
            ledger=ledger,
            ca=ca,
            certs_dir=certs_dir,
            storage=storage,
            push=TopologyRegistry(
                "push", push_proxy, push_upstream, PUSH_USER, PUSH_PASSWORD, service
            ),
            basic=TopologyRegistry(
                "basic", basic_proxy, basic_upstream, BASIC_USER, BASIC_PASSWORD
            ),
            tls=TopologyRegistry("tls", tls_proxy, tls_upstream, TLS_USER, TLS_PASSWORD),
            public=TopologyRegistry("public", public_proxy, public_upstream),
        )
