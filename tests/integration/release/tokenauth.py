"""A docker-registry with `auth: token` and a small token issuer, both on 127.0.0.1.

The issuer follows distribution's token spec (docs/spec/auth/token.md): GET /token with
`service` and repeated `scope`, HTTP Basic credentials; it answers a JWT signed RS256 by a
self-signed certificate that is also the registry's `rootcertbundle` (the certificate travels
in the `x5c` header). Keys are made with the `openssl` CLI, and signing is `openssl dgst`.
The issuer grants every requested action to the right user, nothing to anyone else, and
records each request so tests can check scopes and token refreshes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import requests
import yaml

from bed.process import free_port, start_service

SERVICE = "gpuship-test-registry"
ISSUER = "gpuship-test-issuer"
TOKEN_USER = "releaser"
TOKEN_PASSWORD = "token-bed-secret"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class TokenIssuer:
    """Signs tokens; `requests` logs (scopes, authorised) of each token request."""

    key: Path
    cert_der: bytes
    username: str
    password: str
    expires_in: int = 300
    requests: list[tuple[list[str], bool]] = field(default_factory=list)

    def token(self, scopes: list[str], subject: str) -> str:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 600,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        signature = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", str(self.key)],
            input=signing_input.encode(),
            capture_output=True,
            check=True,
        ).stdout
        return f"{signing_input}.{_b64url(signature)}"


def _issuer_handler(issuer: TokenIssuer) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{issuer.username}:{issuer.password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            scopes = [s for value in query.get("scope", []) for s in value.split(" ") if s]
            authorised = self.headers.get("Authorization") == expected
            issuer.requests.append((scopes, authorised))
            if self.headers.get("Authorization") and not authorised:
                body, status = b'{"details":"bad credentials"}', 401
            else:
                granted = scopes if authorised else []
                token = issuer.token(granted, issuer.username if authorised else "anonymous")
                body = json.dumps({"token": token, "expires_in": issuer.expires_in}).encode()
                status = 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@dataclass(frozen=True)
class TokenRegistry:
    """A running token-auth registry and its issuer."""

    host: str
    url: str
    issuer: TokenIssuer


@contextlib.contextmanager
def run_token_registry(root: Path, username: str, password: str) -> Iterator[TokenRegistry]:
    """Start the issuer and a registry trusting it; stop both at exit."""
    root.mkdir(parents=True, exist_ok=True)
    key, cert = root / "key.pem", root / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            f"/CN={ISSUER}",
        ],
        check=True,
        capture_output=True,
    )
    der = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-outform", "DER"], check=True, capture_output=True
    ).stdout
    issuer = TokenIssuer(key, der, username, password)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _issuer_handler(issuer))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = free_port()
    config = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(root / "data")},
            "delete": {"enabled": True},
        },
        "http": {"addr": f"127.0.0.1:{port}", "secret": "gpuship-token-bed"},
        "auth": {
            "token": {
                "realm": f"http://127.0.0.1:{server.server_address[1]}/token",
                "service": SERVICE,
                "issuer": ISSUER,
                "rootcertbundle": str(cert),
            }
        },
    }
    config_path = root / "config.yml"
    config_path.write_text(yaml.safe_dump(config))
    service = start_service(
        "docker-registry-token",
        ["docker-registry", "serve", str(config_path)],
        root / "registry.log",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        service.wait_ready(lambda: requests.get(f"{url}/v2/", timeout=2).status_code == 401, 30)
        yield TokenRegistry(f"127.0.0.1:{port}", url, issuer)
    finally:
        service.stop()
        server.shutdown()
        server.server_close()
