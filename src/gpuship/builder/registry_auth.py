"""The credentials a build hands to its builder, each registry's own and nothing more.

The engine builder gets the push registry's credential per `docker push` (the engine's
`X-Registry-Auth`). buildx reads credentials from `$DOCKER_CONFIG/config.json`, so it runs with
a temporary DOCKER_CONFIG (a 0700 directory, removed afterwards) whose `auths` hold one entry
per registry the build needs, that registry's own credential from gpuship's sources
(`gpuship.registry.credentials`): the push registry, the cache registry, the base image's
registry. The user's whole config.json (every `docker login`, every helper) is never handed
over. The user's buildx builders, contexts and CLI plugins are linked in, so `docker buildx`
finds the same plugin and builder it would without gpuship.

BuildKit and the engine then treat those credentials the Docker way: a credential also goes to
whatever token realm its registry names. gpuship's own stricter realm rule
(`gpuship.registry.auth`) covers the requests gpuship itself sends.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from gpuship.reference import DOCKER_HUB, parse_reference
from gpuship.registry.credentials import Credentials, CredentialStore

# config.json's key for Docker Hub (docker/cli `registry.IndexServer`).
DOCKER_HUB_KEY = "https://index.docker.io/v1/"
# What buildx needs from the user's DOCKER_CONFIG besides credentials.
_LINKED = ("buildx", "contexts", "cli-plugins")


def registry_of(reference: str) -> str:
    """The registry host of an image reference or repository (`ghcr.io`, `docker.io`)."""
    return parse_reference(reference, default_tag=None).registry


def engine_auth(credentials: Credentials | None) -> dict[str, str] | None:
    """The engine's auth config (X-Registry-Auth) for one push, or None to push anonymously."""
    if credentials is None:
        return None
    address = DOCKER_HUB_KEY if credentials.registry == DOCKER_HUB else credentials.registry
    if credentials.identity_token is not None:
        return {"identitytoken": credentials.identity_token, "serveraddress": address}
    if credentials.username is None or credentials.password is None:
        return None
    return {
        "username": credentials.username,
        "password": credentials.password,
        "serveraddress": address,
    }


def config_auths(registries: Iterable[str], store: CredentialStore) -> dict[str, dict[str, str]]:
    """config.json `auths` with each registry's own credential (registries without one left
    out, so the builder goes there anonymously)."""
    auths: dict[str, dict[str, str]] = {}
    for registry in dict.fromkeys(registries):
        found = store.find(registry)
        if found is None:
            continue
        key = DOCKER_HUB_KEY if registry == DOCKER_HUB else registry
        if found.identity_token is not None:
            auths[key] = {"identitytoken": found.identity_token}
        elif found.username is not None and found.password is not None:
            raw = f"{found.username}:{found.password}".encode()
            auths[key] = {"auth": base64.b64encode(raw).decode()}
    return auths


def _user_docker_config(environ: Mapping[str, str]) -> Path:
    if environ.get("DOCKER_CONFIG"):
        return Path(environ["DOCKER_CONFIG"])
    return Path(environ.get("HOME") or Path.home()) / ".docker"


def _current_context(directory: Path) -> str | None:
    try:
        document = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    context = document.get("currentContext") if isinstance(document, dict) else None
    return context if isinstance(context, str) and context else None


@contextlib.contextmanager
def scoped_docker_config(
    registries: Iterable[str], environ: Mapping[str, str]
) -> Iterator[dict[str, str]]:
    """The environment for one buildx run: DOCKER_CONFIG pointing at a temporary config that
    holds only `registries`' own credentials; removed when the context exits."""
    auths = config_auths(registries, CredentialStore(environ))
    user = _user_docker_config(environ)
    with tempfile.TemporaryDirectory(prefix="gpuship-docker-config-") as tmp:
        directory = Path(tmp)  # mkdtemp: 0700, only this user can read the credentials
        config: dict[str, object] = {"auths": auths}
        context = _current_context(user)
        if context is not None:
            config["currentContext"] = context
        path = directory / "config.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        for name in _LINKED:
            if (user / name).exists():
                (directory / name).symlink_to(user / name)
        yield {**environ, "DOCKER_CONFIG": str(directory)}
