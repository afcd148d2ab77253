"""Image references (`registry/name:tag@digest`) parsed and normalised the way Docker does.

Rules follow distribution/reference (`normalize.go` `splitDockerDomain`): the first path component
is a registry host only if it contains "." or ":", is "localhost", or has upper-case letters;
otherwise the image lives on Docker Hub, and single-component Hub names get "library/".
Name, tag and digest grammars are those of the OCI distribution-spec v1.1.1 (§1.1 of
shared/reference/registry-release.md).

Digests: `algorithm ":" encoded` (OCI image-spec v1.1 descriptor.md, "Digests"). Content is
verified with the registered algorithms only, sha256 and sha512 ("Registered algorithms", each
lower-case hex of a fixed length); a digest of any other algorithm is well-formed by the
grammar but cannot be verified, so gpuship refuses to read content by it (`UnsupportedDigest`,
an input error: the user or the image named it). A digest the registry sends in a header is
the client's to judge (`registry/client.py`: a registry answer, exit 3).

Pure parsing, no I/O: a contract every layer above reads (lint and matrix check references
without the registry adapter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuship.errors import InputError
from gpuship.redaction import shown

if TYPE_CHECKING:
    from hashlib import _Hash

DOCKER_HUB = "docker.io"
DOCKER_HUB_API_HOST = "registry-1.docker.io"
_HUB_ALIASES = frozenset({DOCKER_HUB, "index.docker.io", DOCKER_HUB_API_HOST})
DEFAULT_TAG = "latest"

_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_NAME_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")
# Registered algorithms and the length of their lower-case hex (image-spec descriptor.md).
DIGEST_ALGORITHMS = {"sha256": 64, "sha512": 128}
_HOST_RE = re.compile(r"^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?$")
# Many clients cap `host/name` at 255 characters (distribution/reference NameTotalLengthMax).
_MAX_NAME_LENGTH = 255


class UnsupportedDigest(InputError):
    """A digest that is malformed, or whose algorithm gpuship cannot verify content by."""


def is_digest(text: str) -> bool:
    """True if `text` is a well-formed content digest by the grammar (`sha256:` and `sha512:`
    digests must carry their 64 or 128 lower-case hex); its algorithm may be one gpuship
    cannot verify (`check_digest`)."""
    if not _DIGEST_RE.fullmatch(text):
        return False
    algorithm, _, encoded = text.partition(":")
    length = DIGEST_ALGORITHMS.get(algorithm)
    return length is None or (len(encoded) == length and _is_lower_hex(encoded))


def _is_lower_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def check_digest(text: str, where: str = "") -> str:
    """`text` when it is a digest gpuship can verify content by; else UnsupportedDigest, after
    `where` (what names it), saying why: malformed, or an algorithm other than sha256/sha512."""
    prefix = f"{where}: " if where else ""
    if not is_digest(text):
        raise UnsupportedDigest(
            f"{prefix}{shown(text)} is not a digest (algorithm:encoded, e.g. sha256:<64 "
            "lower-case hex>)"
        )
    algorithm = text.partition(":")[0]
    if algorithm not in DIGEST_ALGORITHMS:
        raise UnsupportedDigest(
            f"{prefix}digest {shown(text)} uses the algorithm {shown(algorithm)}, which gpuship "
            f"cannot verify content by (it knows {' and '.join(DIGEST_ALGORITHMS)}, the "
            "algorithms the OCI image spec registers)"
        )
    return text


def digest_hash(digest: str, where: str = "") -> _Hash:
    """A new hash of `digest`'s algorithm, to verify content against it (`check_digest`)."""
    import hashlib  # here: lint parses references, and hashes nothing (issue #37)

    return hashlib.new(check_digest(digest, where).partition(":")[0])


def content_matches(data: bytes, digest: str, where: str = "") -> bool:
    """True if `data` hashes to `digest` (UnsupportedDigest when it cannot be verified)."""
    hasher = digest_hash(digest, where)
    hasher.update(data)
    return hasher.hexdigest() == digest.partition(":")[2]


def sha256_digest(data: bytes) -> str:
    """The `sha256:<hex>` digest of `data`."""
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_valid_tag(text: str) -> bool:
    """True if `text` is a legal tag (OCI tag grammar, at most 128 characters)."""
    return bool(_TAG_RE.fullmatch(text))


@dataclass(frozen=True)
class Repository:
    """A repository in a registry: `registry` is the normalised host (`docker.io` for Hub)."""

    registry: str
    name: str

    @property
    def api_host(self) -> str:
        """The host that serves the registry API (Docker Hub's is not `docker.io`)."""
        return DOCKER_HUB_API_HOST if self.registry == DOCKER_HUB else self.registry

    def tag(self, tag: str) -> Reference:
        """This repository at `tag`."""
        if not is_valid_tag(tag):
            raise InputError(f"invalid tag {tag!r}: tags are [A-Za-z0-9_][A-Za-z0-9._-]{{0,127}}")
        return Reference(self, tag, None)

    def at(self, digest: str) -> Reference:
        """This repository at `digest` (one gpuship can verify: `check_digest`)."""
        return Reference(self, None, check_digest(digest, str(self)))

    def __str__(self) -> str:
        return f"{self.registry}/{self.name}"


@dataclass(frozen=True)
class Reference:
    """A manifest in a repository, by tag, by digest, or both (the digest wins for fetching)."""

    repository: Repository
    tag: str | None
    digest: str | None

    @property
    def registry(self) -> str:
        """The normalised registry host."""
        return self.repository.registry

    @property
    def name(self) -> str:
        """The repository name inside the registry."""
        return self.repository.name

    @property
    def identifier(self) -> str:
        """What goes after `/manifests/`: the digest if known, else the tag."""
        if self.digest is not None:
            return self.digest
        if self.tag is None:
            raise InputError(f"reference {self} names neither a tag nor a digest")
        return self.tag

    def with_digest(self, digest: str) -> Reference:
        """The same reference pinned to `digest` (the tag is kept for display)."""
        return Reference(self.repository, self.tag, check_digest(digest, str(self)))

    def __str__(self) -> str:
        text = str(self.repository)
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def _split_registry(text: str) -> tuple[str, str]:
    first, slash, rest = text.partition("/")
    looks_like_host = "." in first or ":" in first or first == "localhost" or first.lower() != first
    if not slash or not looks_like_host:
        return DOCKER_HUB, text
    if not _HOST_RE.fullmatch(first):
        raise ValueError(f"{first!r} is not a valid registry host")
    host = first.lower()
    if host in _HUB_ALIASES:
        host = DOCKER_HUB
    return host, rest


# Where a registry credential is given instead of inside a reference or host.
_CREDENTIALS_GO = (
    "go in GPUSHIP_REGISTRY_USER/GPUSHIP_REGISTRY_PASSWORD, GPUSHIP_REGISTRY_AUTH or "
    "Docker's config (`docker login`)"
)


def normalise_registry(text: str) -> str:
    """A registry host as image references name it: `ghcr.io`, `127.0.0.1:5000`, `docker.io`.

    Accepts the key forms of Docker's config.json too (`https://index.docker.io/v1/`,
    `https://host:5000`); raises InputError for anything that is not a host.
    """
    host = text.strip().split("://", 1)[-1].split("/", 1)[0].lower()
    if "@" in host:
        raise InputError(
            f"{shown('***@' + host.rpartition('@')[2])} is not a registry host: it holds a user "
            f"name or password, which {_CREDENTIALS_GO}"
        )
    if not host or not _HOST_RE.fullmatch(host):
        raise InputError(
            f"{shown(text)} is not a registry host (expected e.g. ghcr.io or host:5000)"
        )
    return DOCKER_HUB if host in _HUB_ALIASES else host


def parse_reference(text: str, *, default_tag: str | None = DEFAULT_TAG) -> Reference:
    """Parse and normalise an image reference such as `ubuntu`, `ghcr.io/o/a:1.0` or `r/a@sha256:…`.

    With neither tag nor digest the tag is `default_tag` (None keeps it unset). Raises InputError
    naming the reference and what is wrong with it.
    """
    head, slash, rest = text.strip().partition("/")
    if slash and "@" in head:
        # A registry host holds no "@", and a digest's comes after the last "/": this is
        # `user:password@host/...` (or `token@host/...`), quoted without what precedes the host.
        raise InputError(
            f"invalid image reference {shown('***@' + head.rpartition('@')[2] + '/' + rest)}: "
            f"it holds a user name or password, which {_CREDENTIALS_GO}"
        )
    try:
        return _parse(text.strip(), default_tag)
    except ValueError as error:
        raise InputError(f"invalid image reference {shown(text)}: {error}") from None


def _parse(text: str, default_tag: str | None) -> Reference:
    if not text:
        raise ValueError("empty")
    if "://" in text:
        raise ValueError("a reference has no URL scheme; drop the 'https://'")
    remainder, at, digest = text.partition("@")
    if at:
        try:
            check_digest(digest)
        except UnsupportedDigest as error:
            raise ValueError(str(error)) from None
    registry, path = _split_registry(remainder)
    tag: str | None = None
    last_slash = path.rfind("/")
    colon = path.rfind(":")
    if colon > last_slash:
        path, tag = path[:colon], path[colon + 1 :]
        if not is_valid_tag(tag):
            raise ValueError(f"{tag!r} is not a valid tag")
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not _NAME_RE.fullmatch(path):
        raise ValueError(
            f"{path!r} is not a valid repository name (lower-case letters, digits, '.', '_', '-')"
        )
    if len(registry) + 1 + len(path) > _MAX_NAME_LENGTH:
        raise ValueError(f"name longer than {_MAX_NAME_LENGTH} characters")
    if tag is None and not at:
        tag = default_tag
    return Reference(Repository(registry, path), tag, digest if at else None)


def parse_repository(text: str) -> Repository:
    """Parse a repository (`registry/name`, no tag or digest) with Docker's normalisation."""
    reference = parse_reference(text, default_tag=None)
    if reference.tag is not None or reference.digest is not None:
        raise InputError(f"invalid repository {text!r}: expected no tag or digest")
    return reference.repository
