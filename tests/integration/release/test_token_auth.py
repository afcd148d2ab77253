"""Bearer token auth against docker-registry's own `auth: token` with the bed's token service
(on another port, named as the registry's token service by the credential)."""

from __future__ import annotations

import io
import time

import pytest
from release_images import RunCli, candidate_image, candidate_index

from bed.oci import push
from bed.registry import Registry
from bed.topology import TopologyRegistry as TokenRegistry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import RegistryAuthError

pytestmark = pytest.mark.integration


def test_promote_move_and_roll_back_with_bearer_tokens(
    registry: Registry, token_registry: TokenRegistry, run_cli: RunCli
):
    first = push(registry.url, "tok/src", candidate_index("tok-1"))
    second = push(registry.url, "tok/src", candidate_index("tok-2"))
    target = f"{token_registry.host}/tok/app"
    token_registry.issuer.requests.clear()
    credentials = token_registry.credential_env()
    for digest, version in ((first, "1.0.0"), (second, "1.1.0")):
        result = run_cli(
            "promote",
            registry.ref("tok/src", digest),
            "--tag",
            version,
            "--move",
            "stable",
            "--to",
            target,
            environ=credentials,
        )
        assert result.code == 0, result
    scopes = {scope for request, _ in token_registry.issuer.requests for scope in request}
    assert "repository:tok/app:pull,push" in scopes
    assert all(authorised for _, authorised in token_registry.issuer.requests)
    client = RegistryClient(environ=credentials)
    repo = Repository(token_registry.host, "tok/app")
    assert client.resolve_digest(repo.tag("stable")) == second
    rolled = run_cli("rollback", f"{target}:stable", environ=credentials)
    assert rolled.code == 0, rolled
    assert client.resolve_digest(repo.tag("stable")) == first


def test_refusals_name_the_source_never_the_secret(
    registry: Registry, token_registry: TokenRegistry, run_cli: RunCli
):
    digest = push(registry.url, "tok/src", candidate_image("tok-refused"))
    wrong = {**token_registry.credential_env(), "GPUSHIP_REGISTRY_PASSWORD": "not-the-password"}
    result = run_cli(
        "promote",
        registry.ref("tok/src", digest),
        "--tag",
        "9.9.9",
        "--to",
        f"{token_registry.host}/tok/refused",
        environ=wrong,
    )
    assert result.code == 2
    assert "GPUSHIP_REGISTRY_USER" in result.stderr
    assert "not-the-password" not in result.stderr
    # Anonymous: the issuer grants nothing, the registry refuses the (empty) token.
    with pytest.raises(RegistryAuthError, match="anonymous"):
        RegistryClient(environ={}).list_tags(Repository(token_registry.host, "tok/app"))


def test_tokens_are_cached_then_renewed_when_expired(token_registry: TokenRegistry):
    client = RegistryClient(environ=token_registry.credential_env())
    repo = Repository(token_registry.host, "tok/renew")
    image = candidate_image("renew")
    for blob in (*image.layers, image.config):
        client.upload_blob(repo, blob.digest, io.BytesIO(blob.data), len(blob.data))
    client.put_manifest(repo.tag("v1"), image.manifest.data, image.manifest.media_type)
    token_registry.issuer.expires_in = 1
    try:
        assert client.resolve_digest(repo.tag("v1")) == image.digest
        issued = len(token_registry.issuer.requests)
        assert client.resolve_digest(repo.tag("v1")) == image.digest
        assert len(token_registry.issuer.requests) == issued  # cached
        time.sleep(1.2)
        assert client.resolve_digest(repo.tag("v1")) == image.digest
        assert len(token_registry.issuer.requests) == issued + 1  # renewed
    finally:
        token_registry.issuer.expires_in = 300
