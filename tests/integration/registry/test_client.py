"""RegistryClient against the real docker-registry (distribution v2.8) of the test bed."""

from __future__ import annotations

import base64
import io
import json
import os
import stat
from pathlib import Path

import pytest

from bed.oci import Blob, canonical_json, make_image, make_index, push
from bed.registry import Registry
from gpuship.reference import Repository, parse_reference, sha256_digest
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import DigestMismatch, NotFound, RegistryAuthError
from gpuship.registry.manifest import ImageIndex, parse_manifest

pytestmark = pytest.mark.integration


def _image(marker: str, size: int = 1000):  # type: ignore[no-untyped-def]
    return make_image([{f"app/{marker}.bin": os.urandom(size)}], labels={"marker": marker})


@pytest.fixture
def client() -> RegistryClient:
    return RegistryClient(environ={})


def test_manifest_get_head_resolve_by_tag_and_digest(registry: Registry, client: RegistryClient):
    image = _image("get")
    push(registry.url, "client/get", image, tag="v1")
    by_tag = client.get_manifest(parse_reference(registry.ref("client/get", "v1")))
    assert by_tag.data == image.manifest.data
    assert by_tag.digest == image.digest
    assert by_tag.media_type == image.manifest.media_type
    by_digest = client.get_manifest(parse_reference(registry.ref("client/get", image.digest)))
    assert by_digest == by_tag
    head = client.head_manifest(parse_reference(registry.ref("client/get", "v1")))
    assert head is not None
    assert (head.digest, head.size) == (image.digest, len(image.manifest.data))
    assert client.resolve_digest(parse_reference(registry.ref("client/get", "v1"))) == image.digest
    assert client.head_manifest(parse_reference(registry.ref("client/get", "nope"))) is None
    with pytest.raises(NotFound):
        client.resolve_digest(parse_reference(registry.ref("client/get", "nope")))


def test_docker_list_by_tag_is_not_rewritten(registry: Registry, client: RegistryClient):
    # registry:2 rewrites a Docker list fetched by tag to its amd64 child unless Accept lists it.
    amd = make_image([{"a": b"amd"}], docker_media_types=True)
    index = make_index([amd], docker_media_types=True)
    push(registry.url, "client/list", index, tag="multi")
    fetched = client.get_manifest(parse_reference(registry.ref("client/list", "multi")))
    assert fetched.digest == index.digest
    document = parse_manifest(fetched.data, fetched.media_type)
    assert isinstance(document, ImageIndex)
    assert [d.digest for d in document.manifests] == [amd.digest]


def test_put_and_delete_manifest(registry: Registry, client: RegistryClient):
    image = _image("put")
    push(registry.url, "client/put", image)
    repo = Repository(registry.host, "client/put")
    digest = client.put_manifest(repo.tag("copy"), image.manifest.data, image.manifest.media_type)
    assert digest == image.digest
    assert client.resolve_digest(repo.tag("copy")) == image.digest
    client.delete_manifest(repo.at(image.digest))
    assert client.head_manifest(repo.tag("copy")) is None


def test_blob_stream_is_verified_and_corruption_detected(
    registry: Registry, client: RegistryClient
):
    image = _image("blob", 200_000)
    push(registry.url, "client/blob", image)
    repo = Repository(registry.host, "client/blob")
    layer = image.layers[0]
    with client.open_blob(repo, layer.digest) as reader:
        assert reader.size == len(layer.data)
        assert b"".join(reader.iter_chunks(4096)) == layer.data
    # Corrupt the stored blob on the registry's disk: the reader must refuse it at EOF.
    hexdigest = layer.digest.removeprefix("sha256:")
    data_file = (
        registry.root / "data/docker/registry/v2/blobs/sha256" / hexdigest[:2] / hexdigest / "data"
    )
    original = data_file.read_bytes()
    data_file.write_bytes(original[:-1] + bytes([original[-1] ^ 0xFF]))
    try:
        with client.open_blob(repo, layer.digest) as reader, pytest.raises(DigestMismatch):
            reader.read()
    finally:
        data_file.write_bytes(original)


def test_mount_upload_and_cross_registry_copy(registry: Registry, registry_basic_auth: Registry):
    image = _image("copy", 3_000_000)
    push(registry.url, "client/src", image)
    src = Repository(registry.host, "client/src")
    dst = Repository(registry.host, "client/dst")
    client = RegistryClient(environ=registry_basic_auth.credential_env())
    layer = image.layers[0]
    assert not client.blob_exists(dst, layer.digest)
    assert client.copy_blob(src, dst, layer.digest) == "mounted"
    assert client.blob_exists(dst, layer.digest)
    # Across registries (the second one needs basic auth): chunked streaming copy.
    far = Repository(registry_basic_auth.host, "client/far")
    seen: list[int] = []
    assert client.copy_blob(src, far, layer.digest, chunk_size=1 << 20, progress=seen.append) == (
        "copied"
    )
    assert sum(seen) == len(layer.data)
    assert len(seen) == -(-len(layer.data) // (1 << 20))
    with client.open_blob(far, layer.digest) as reader:
        assert reader.read() == layer.data
    assert client.copy_blob(src, far, layer.digest) == "exists"
    # Monolithic upload of a fresh blob.
    data = os.urandom(5000)
    digest = sha256_digest(data)
    client.upload_blob(far, digest, io.BytesIO(data), len(data))
    assert client.blob_exists(far, digest)
    assert not client.blob_exists(far, sha256_digest(b"never uploaded"))
    small = b"small blob in one request"
    assert client.push_blob(far, small) == sha256_digest(small)
    with client.open_blob(far, sha256_digest(small)) as reader:
        assert reader.read() == small


def test_list_tags_and_paging(registry: Registry, client: RegistryClient):
    image = _image("tags")
    names = ["a", "b", "c", "d", "e"]
    for name in names:
        push(registry.url, "client/tags", image, tag=name)
    repo = Repository(registry.host, "client/tags")
    assert sorted(client.list_tags(repo)) == names
    assert sorted(client.list_tags(repo, page_size=2)) == names
    with pytest.raises(NotFound):
        client.list_tags(Repository(registry.host, "client/none"))


def test_referrers_fall_back_to_tag_schema(registry: Registry, client: RegistryClient):
    image = _image("subject")
    push(registry.url, "client/ref", image)
    repo = Repository(registry.host, "client/ref")
    assert client.referrers(repo.at(image.digest)) == []
    # A signature-like artifact whose subject is the image, listed under the fallback tag.
    empty = Blob("application/vnd.oci.empty.v1+json", b"{}")
    client.upload_blob(repo, empty.digest, io.BytesIO(empty.data), len(empty.data))
    artifact = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.example.sig",
        "config": empty.descriptor(),
        "layers": [empty.descriptor()],
        "subject": {
            "mediaType": image.manifest.media_type,
            "digest": image.digest,
            "size": len(image.manifest.data),
        },
    }
    artifact_bytes = canonical_json(artifact)
    artifact_digest = sha256_digest(artifact_bytes)
    client.put_manifest(
        repo.at(artifact_digest), artifact_bytes, "application/vnd.oci.image.manifest.v1+json"
    )
    fallback = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": artifact_digest,
                "size": len(artifact_bytes),
                "artifactType": "application/vnd.example.sig",
            }
        ],
    }
    tag = image.digest.replace(":", "-")
    client.put_manifest(
        repo.tag(tag), canonical_json(fallback), "application/vnd.oci.image.index.v1+json"
    )
    found = client.referrers(repo.at(image.digest))
    assert [d.digest for d in found] == [artifact_digest]
    assert client.referrers(repo.at(image.digest), artifact_type="application/other") == []


def test_basic_auth_sources_and_refusal(
    registry_basic_auth: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    image = _image("auth")
    push(registry_basic_auth.url, "client/auth", image, tag="v1", auth=registry_basic_auth.auth)
    ref = parse_reference(registry_basic_auth.ref("client/auth", "v1"))
    with pytest.raises(RegistryAuthError, match="needs a username and password"):
        RegistryClient(environ={"DOCKER_CONFIG": str(tmp_path / "none")}).resolve_digest(ref)
    wrong = {**registry_basic_auth.credential_env(), "GPUSHIP_REGISTRY_PASSWORD": "wrong-password"}
    with pytest.raises(RegistryAuthError) as refused:
        RegistryClient(environ=wrong).resolve_digest(ref)
    assert "wrong-password" not in str(refused.value)
    assert "GPUSHIP_REGISTRY_USER" in str(refused.value)
    # docker config.json `auths` entry.
    config_dir = tmp_path / "plain"
    config_dir.mkdir()
    token = base64.b64encode(
        f"{registry_basic_auth.username}:{registry_basic_auth.password}".encode()
    )
    (config_dir / "config.json").write_text(
        json.dumps({"auths": {registry_basic_auth.host: {"auth": token.decode()}}})
    )
    assert RegistryClient(environ={"DOCKER_CONFIG": str(config_dir)}).resolve_digest(ref) == (
        image.digest
    )
    # credHelpers: a docker-credential-* helper on PATH answers `get`.
    helper_dir = tmp_path / "bin"
    helper_dir.mkdir()
    helper = helper_dir / "docker-credential-gpushiptest"
    answer = json.dumps(
        {"Username": registry_basic_auth.username, "Secret": registry_basic_auth.password}
    )
    helper.write_text(f"#!/bin/sh\n[ \"$1\" = get ] && cat >/dev/null && echo '{answer}'\n")
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    helper_config = tmp_path / "helper"
    helper_config.mkdir()
    (helper_config / "config.json").write_text(
        json.dumps({"credHelpers": {registry_basic_auth.host: "gpushiptest"}})
    )
    # docker.credentials finds the helper on the process PATH.
    monkeypatch.setenv("PATH", f"{helper_dir}:{os.environ['PATH']}")
    environ = {"DOCKER_CONFIG": str(helper_config)}
    assert RegistryClient(environ=environ).resolve_digest(ref) == image.digest
