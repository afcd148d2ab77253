"""A real OCI registry (Debian `docker-registry`, distribution v2.8) on 127.0.0.1.

Each registry gets its own free port, storage dir and config file under a temp dir, has
`storage.delete.enabled: true` (off by default in v2.8), and optionally htpasswd basic auth
(bcrypt only: distribution ignores other hash types) and HTTPS with a certificate from a bed CA
(served by the registry's own Go TLS stack, with no proxy in between).
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests
import yaml

from bed.pki import CertificateAuthority
from bed.process import ServiceProcess, ServiceStartError, free_port, start_service

REGISTRY_BINARY = "docker-registry"
READY_TIMEOUT_S = 30.0
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class Registry:
    """A running registry: `host` is what image references use, `url` what HTTP clients use."""

    host: str
    url: str
    root: Path
    config_path: Path
    log_path: Path
    username: str | None = None
    password: str | None = None

    @property
    def auth(self) -> tuple[str, str] | None:
        """(username, password) for `requests` when the registry needs basic auth."""
        if self.username is None or self.password is None:
            return None
        return (self.username, self.password)

    def credential_env(self) -> dict[str, str]:
        """gpuship's environment for this registry's credential (it names its registry)."""
        if self.username is None or self.password is None:
            return {}
        return {
            "GPUSHIP_REGISTRY": self.host,
            "GPUSHIP_REGISTRY_USER": self.username,
            "GPUSHIP_REGISTRY_PASSWORD": self.password,
        }

    def ref(self, repository: str, tag_or_digest: str = "latest") -> str:
        """An image reference in this registry: `127.0.0.1:PORT/repo:tag` or `...@sha256:..`."""
        separator = "@" if tag_or_digest.startswith("sha256:") else ":"
        return f"{self.host}/{repository}{separator}{tag_or_digest}"


def write_htpasswd(path: Path, username: str, password: str) -> None:
    """Write a bcrypt htpasswd entry with apache2-utils' `htpasswd -Bbn`."""
    entry = subprocess.run(
        ["htpasswd", "-Bbn", username, password], check=True, capture_output=True, text=True
    ).stdout
    path.write_text(entry)


def registry_config(
    root: Path,
    port: int,
    auth: dict[str, object] | None = None,
    tls: dict[str, str] | None = None,
) -> dict[str, object]:
    """The distribution v2.8 config for one bed registry; `auth` is its `auth:` section, `tls`
    its `http.tls:` (certificate and key paths)."""
    http: dict[str, object] = {"addr": f"127.0.0.1:{port}", "secret": "gpuship-test-bed"}
    if tls is not None:
        http["tls"] = tls
    config: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(root / "data")},
            "delete": {"enabled": True},
            "maintenance": {"uploadpurging": {"enabled": False}},
        },
        "http": http,
    }
    if auth is not None:
        config["auth"] = auth
    return config


def _answers_v2(url: str, auth_required: bool, ca: Path | None) -> bool:
    # Without credentials a registry with auth answers /v2/ with 401 once it is serving.
    verify: str | bool = str(ca) if ca is not None else True
    status = requests.get(f"{url}/v2/", timeout=2, verify=verify).status_code
    return status == (401 if auth_required else 200)


@contextlib.contextmanager
def run_registry(
    root: Path,
    username: str | None = None,
    password: str | None = None,
    *,
    auth: dict[str, object] | None = None,
    tls: CertificateAuthority | None = None,
) -> Iterator[Registry]:
    """Run a registry under `root` until the context exits; htpasswd basic auth when a username
    is given, else the `auth:` section given (e.g. token auth), else none. With `tls` it serves
    HTTPS only, with a certificate for 127.0.0.1 signed by that CA."""
    root.mkdir(parents=True, exist_ok=True)
    if username is not None:
        if password is None:
            raise ValueError("a basic-auth registry needs a password")
        htpasswd = root / "htpasswd"
        write_htpasswd(htpasswd, username, password)
        auth = {"htpasswd": {"realm": "gpuship-test", "path": str(htpasswd)}}
    tls_config, ca, scheme = None, None, "http"
    if tls is not None:
        cert = tls.server_cert(f"registry-{root.name}")
        tls_config = {"certificate": str(cert.cert_path), "key": str(cert.key_path)}
        ca, scheme = tls.cert_path, "https"
    service: ServiceProcess | None = None
    last_error: ServiceStartError | None = None
    # A free port can be taken between asking and binding; a new port fixes that.
    for _ in range(PORT_ATTEMPTS):
        port = free_port()
        config_path = root / "config.yml"
        config_path.write_text(yaml.safe_dump(registry_config(root, port, auth, tls_config)))
        url = f"{scheme}://127.0.0.1:{port}"
        service = start_service(
            "docker-registry", [REGISTRY_BINARY, "serve", str(config_path)], root / "registry.log"
        )
        probe = functools.partial(_answers_v2, url, auth is not None, ca)
        try:
            service.wait_ready(probe, READY_TIMEOUT_S)
        except ServiceStartError as error:
            service.stop()
            last_error = error
            continue
        try:
            yield Registry(
                host=f"127.0.0.1:{port}",
                url=url,
                root=root,
                config_path=config_path,
                log_path=service.log_path,
                username=username,
                password=password,
            )
        finally:
            service.stop()
        return
    assert last_error is not None
    raise last_error
