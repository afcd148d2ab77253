"""Manifest and index documents as read from a registry (OCI image-spec and Docker schema 2).

Models keep unknown fields (`extra="allow"`) because manifests are only ever read here; the bytes
pushed anywhere are always the original bytes, never a re-serialisation.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuship.documents import load_json
from gpuship.errors import InputError
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.redaction import shown
from gpuship.reference import is_digest

MEDIA_OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MEDIA_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MEDIA_OCI_EMPTY = "application/vnd.oci.empty.v1+json"
# Order matters only for readability; registry:2 needs every one of them in Accept, or it answers
# 404 for OCI documents and rewrites a Docker list fetched by tag (reference §1.3).
MANIFEST_MEDIA_TYPES = (
    MEDIA_OCI_INDEX,
    MEDIA_OCI_MANIFEST,
    MEDIA_DOCKER_LIST,
    MEDIA_DOCKER_MANIFEST,
)
INDEX_MEDIA_TYPES = frozenset({MEDIA_OCI_INDEX, MEDIA_DOCKER_LIST})

# BuildKit attestation manifests (moby/buildkit docs/attestations/attestation-storage.md).
ATTESTATION_REFERENCE_TYPE = "vnd.docker.reference.type"
ATTESTATION_MANIFEST = "attestation-manifest"


class OciDocument(BaseModel):
    """A JSON document of the image spec (or Docker's) as read from outside: unknown fields
    kept, fields by their JSON names or ours, frozen. Image configs (`image/source.py`) are
    read through it too."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)


class DescriptorPlatform(OciDocument):
    """The platform an index entry runs on (its descriptor's `platform`)."""

    architecture: str
    os: str
    variant: str | None = None
    os_version: str | None = Field(default=None, alias="os.version")


class Descriptor(OciDocument):
    """A pointer to content by media type, digest and size."""

    media_type: str = Field(alias="mediaType")
    digest: str
    size: int
    platform: DescriptorPlatform | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    artifact_type: str | None = Field(default=None, alias="artifactType")

    @field_validator("digest")
    @classmethod
    def _well_formed(cls, value: str) -> str:
        # By the grammar only: an algorithm gpuship cannot verify is refused when content is
        # read by it (`check_digest`), not in an entry nobody reads.
        if not is_digest(value):
            raise ValueError(f"{shown(value)} is not a digest (algorithm:encoded)")
        return value

    @property
    def is_attestation(self) -> bool:
        """True for BuildKit attestation entries (`unknown/unknown`), never a runnable image."""
        if self.annotations.get(ATTESTATION_REFERENCE_TYPE) == ATTESTATION_MANIFEST:
            return True
        return self.platform is not None and (self.platform.os, self.platform.architecture) == (
            "unknown",
            "unknown",
        )


class ImageManifest(OciDocument):
    """A single image (or artifact) manifest: one config blob and its layers."""

    schema_version: int = Field(alias="schemaVersion")
    media_type: str | None = Field(default=None, alias="mediaType")
    artifact_type: str | None = Field(default=None, alias="artifactType")
    config: Descriptor
    layers: list[Descriptor] = Field(default_factory=list)
    subject: Descriptor | None = None
    annotations: dict[str, str] = Field(default_factory=dict)

    @property
    def blobs(self) -> list[Descriptor]:
        """Config and layers: every blob the manifest needs in its repository."""
        return [self.config, *self.layers]


class ImageIndex(OciDocument):
    """A multi-platform index / manifest list (may hold attestation manifests too)."""

    schema_version: int = Field(alias="schemaVersion")
    media_type: str | None = Field(default=None, alias="mediaType")
    artifact_type: str | None = Field(default=None, alias="artifactType")
    manifests: list[Descriptor] = Field(default_factory=list)
    subject: Descriptor | None = None
    annotations: dict[str, str] = Field(default_factory=dict)


def parse_manifest(
    data: bytes, media_type: str, limits: Limits = DEFAULT_LIMITS, where: str = ""
) -> ImageManifest | ImageIndex:
    """Parse manifest bytes served with `media_type` into an ImageManifest or ImageIndex.

    A document whose own `mediaType` is not a manifest or index type (a schema 1 manifest, a
    config or layer served as a manifest), or that says it is an index where it was served as
    a manifest (or the reverse), is refused rather than read as something it is not. `where`
    (the image reference) starts every error message when given.
    """
    label = f"{where}: manifest ({media_type})" if where else f"manifest ({media_type})"
    if len(data) > limits.manifest_max_bytes:
        raise InputError(
            f"{label} has {len(data)} bytes "
            f"(limit {Limits.key('manifest_max_bytes')}: {limits.manifest_max_bytes})"
        )
    document = load_json(data, label, limits)
    if not isinstance(document, dict):
        raise InputError(f"{label} is not a JSON object")
    declared = document.get("mediaType")
    if declared is not None and declared not in MANIFEST_MEDIA_TYPES:
        raise InputError(
            f"{label} declares media type {str(declared)[:100]!r}, which is "
            f"not a manifest or index type ({', '.join(MANIFEST_MEDIA_TYPES)})"
        )
    if (
        declared is not None
        and media_type in MANIFEST_MEDIA_TYPES
        and (declared in INDEX_MEDIA_TYPES) != (media_type in INDEX_MEDIA_TYPES)
    ):
        raise InputError(f"{label} declares itself {declared}")
    kind = declared or media_type
    is_index = kind in INDEX_MEDIA_TYPES or ("manifests" in document and "config" not in document)
    try:
        if is_index:
            return ImageIndex.model_validate(document)
        return ImageManifest.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        at = ".".join(str(part) for part in first["loc"])
        raise InputError(f"{label} is invalid at {at}: {first['msg']}") from None


def select_platform(
    index: ImageIndex, os: str, architecture: str, variant: str | None = None
) -> Descriptor | None:
    """The index entry for `os/architecture[/variant]`, skipping attestation entries."""
    for descriptor in index.manifests:
        platform = descriptor.platform
        if descriptor.is_attestation or platform is None:
            continue
        if (platform.os, platform.architecture) != (os, architecture):
            continue
        if variant is None or platform.variant == variant:
            return descriptor
    return None
