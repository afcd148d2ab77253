"""Reference parsing and normalisation, checked against Docker's documented rules."""

from __future__ import annotations

import pytest

from gpuship.errors import InputError
from gpuship.reference import (
    is_digest,
    normalise_registry,
    parse_reference,
    parse_repository,
    sha256_digest,
)

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "registry", "name", "tag", "digest"),
    [
        ("ubuntu", "docker.io", "library/ubuntu", "latest", None),
        ("ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", None),
        ("nvidia/cuda:12.4.1-runtime", "docker.io", "nvidia/cuda", "12.4.1-runtime", None),
        ("docker.io/ubuntu", "docker.io", "library/ubuntu", "latest", None),
        ("index.docker.io/library/ubuntu", "docker.io", "library/ubuntu", "latest", None),
        ("registry-1.docker.io/org/app", "docker.io", "org/app", "latest", None),
        ("ghcr.io/org/app:1.0", "ghcr.io", "org/app", "1.0", None),
        ("GHCR.io/org/app", "ghcr.io", "org/app", "latest", None),
        ("localhost/app", "localhost", "app", "latest", None),
        ("localhost:5000/a/b/c:t", "localhost:5000", "a/b/c", "t", None),
        ("127.0.0.1:5000/app@" + DIGEST, "127.0.0.1:5000", "app", None, DIGEST),
        ("r.example.com/app:v1@" + DIGEST, "r.example.com", "app", "v1", DIGEST),
        ("[::1]:5000/app", "[::1]:5000", "app", "latest", None),
        ("my-registry/app", "docker.io", "my-registry/app", "latest", None),
        # An upper-case first component is a host for Docker (distribution splitDockerDomain).
        ("MyHost/app", "myhost", "app", "latest", None),
    ],
)
def test_normalisation(text: str, registry: str, name: str, tag: str | None, digest: str | None):
    ref = parse_reference(text)
    assert (ref.registry, ref.name, ref.tag, ref.digest) == (registry, name, tag, digest)
    assert ref.identifier == (digest or tag)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "https://ghcr.io/org/app",
        "ghcr.io/Org/app",
        "app:bad tag",
        "app@sha256:short",
        "app:" + "x" * 129,
        "app@md5",
        "r.example.com/-app",
    ],
)
def test_invalid_references_are_input_errors(text: str):
    with pytest.raises(InputError, match="invalid image reference"):
        parse_reference(text)


def test_default_tag_and_repository_parsing():
    assert parse_reference("r.io/app", default_tag=None).tag is None
    repo = parse_repository("r.io/org/app")
    assert str(repo) == "r.io/org/app"
    assert str(repo.tag("1.0")) == "r.io/org/app:1.0"
    assert str(repo.at(DIGEST)) == f"r.io/org/app@{DIGEST}"
    assert parse_repository("ubuntu").api_host == "registry-1.docker.io"
    with pytest.raises(InputError):
        parse_repository("r.io/app:1.0")
    with pytest.raises(InputError):
        repo.tag("no spaces")


def test_digests():
    assert is_digest(DIGEST)
    assert not is_digest("sha256:" + "a" * 63)
    assert is_digest("sha512:" + "a" * 128)
    assert sha256_digest(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("ci:s3cr3t-pw@ghcr.io/o/app:1", "s3cr3t-pw"),
        ("ci:p@ss-w0rd@127.0.0.1:5000/app", "ss-w0rd"),
        ("ghp_0123456789abcdef@ghcr.io/o/app@" + DIGEST, "ghp_0123456789abcdef"),
        ("ci:s3cr3t-pw@ubuntu", "s3cr3t-pw"),
    ],
)
def test_a_reference_with_userinfo_is_refused_without_repeating_it(text: str, secret: str):
    with pytest.raises(InputError) as refused:
        parse_reference(text)
    assert secret not in str(refused.value)
    assert "***" in str(refused.value)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("ci:s3cr3t-pw@127.0.0.1:5000", "s3cr3t-pw"),
        ("https://ci:s3cr3t-pw@ghcr.io/", "s3cr3t-pw"),
        ("ghp_0123456789abcdef@ghcr.io", "ghp_0123456789abcdef"),
    ],
)
def test_a_registry_host_with_userinfo_is_refused_without_repeating_it(text: str, secret: str):
    """`GPUSHIP_REGISTRY=user:pw@host` and config.json keys pass through here."""
    with pytest.raises(InputError, match="holds a user name or password") as refused:
        normalise_registry(text)
    assert secret not in str(refused.value)
