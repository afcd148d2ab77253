"""A token service (distribution docs/spec/auth/token.md) on its own port, for a docker-registry
running `auth: token` with this service's signing certificate as `rootcertbundle`.

GET /token with `service` and repeated `scope`, HTTP Basic credentials: a valid user gets every
action it asked for, anyone else (anonymous included) gets an empty grant, which the registry
then refuses; wrong credentials get 401. Each request is logged (scopes, authorised) and each
Authorization header reported to the credential ledger; each issued token is registered there
with the registry it is for.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from bed.ledger import CredentialLedger
from bed.pki import TokenSigner

SERVICE = "gpuship-test-registry"
ISSUER = "gpuship-test-issuer"


@dataclass
class TokenService:
    """The issuer's state: users, the registry its tokens are for, and a request log."""

    signer: TokenSigner
    users: Mapping[str, str]
    ledger: CredentialLedger
    registry_host: str = ""
    host: str = ""
    expires_in: int = 300
    requests: list[tuple[list[str], bool]] = field(default_factory=list)

    @property
    def realm(self) -> str:
        return f"http://{self.host}/token"

    def user(self, authorization: str | None) -> str | None:
        """The user whose valid Basic credentials `authorization` carries, else None."""
        scheme, _, value = (authorization or "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            username, _, password = base64.b64decode(value).decode().partition(":")
        except ValueError:
            return None
        return username if self.users.get(username) == password else None

    def token(self, scopes: list[str], subject: str) -> str:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        token = self.signer.sign(
            {
                "iss": ISSUER,
                "sub": subject,
                "aud": SERVICE,
                "exp": now + 600,
                "nbf": now - 10,
                "iat": now,
                "jti": uuid.uuid4().hex,
                "access": access,
            }
        )
        self.ledger.issued(token, self.registry_host)
        return token


def _handler(service: TokenService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            authorization = self.headers.get("Authorization")
            service.ledger.record(service.host, authorization)
            query = parse_qs(urlparse(self.path).query)
            scopes = [s for value in query.get("scope", []) for s in value.split(" ") if s]
            user = service.user(authorization)
            service.requests.append((scopes, user is not None))
            if authorization and user is None:
                body, status = b'{"details":"bad credentials"}', 401
            else:
                token = service.token(scopes if user else [], user or "anonymous")
                body = json.dumps({"token": token, "expires_in": service.expires_in}).encode()
                status = 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def run_token_service(service: TokenService) -> Iterator[TokenService]:
    """Serve on a free port of 127.0.0.1 (sets `service.host`) until the context exits."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    server.daemon_threads = True
    service.host = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()


def token_auth_config(service: TokenService) -> dict[str, object]:
    """The registry config's `auth:` section trusting `service`."""
    return {
        "token": {
            "realm": service.realm,
            "service": SERVICE,
            "issuer": ISSUER,
            "rootcertbundle": str(service.signer.cert_path),
        }
    }
