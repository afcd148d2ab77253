"""Release history kept in the released repository itself, as OCI artifacts.

Scheme (no state outside the registry, works on registries without the referrers API):

- each record is an OCI image manifest with `artifactType` RECORD_TYPE, the empty config
  (`application/vnd.oci.empty.v1+json`, `{}`), one layer holding the record JSON, and `subject`
  = the released image, so registries with the referrers API also list it under the image;
- the tag `release.history-tag` (default `gpuship.releases`) holds an OCI index with
  `artifactType` HISTORY_TYPE listing every record manifest, oldest first; each entry carries
  the record JSON in the annotation RECORD_ANNOTATION so the whole history is one GET.

Appending = push the record manifest by digest, then PUT the extended index to the history tag
and read the tag back. The history index keeps the newest `release.history-limit` records.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from gpuship.errors import InputError
from gpuship.registry.artifact import artifact_manifest, canonical_json, push_artifact
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import DigestMismatch, NotFound
from gpuship.registry.manifest import (
    MEDIA_OCI_INDEX,
    MEDIA_OCI_MANIFEST,
    ImageIndex,
    parse_manifest,
)
from gpuship.registry.reference import Repository
from gpuship.release.record import ReleaseRecord

RECORD_TYPE = "application/vnd.gpuship.release.v1+json"
HISTORY_TYPE = "application/vnd.gpuship.release-history.v1+json"
RECORD_ANNOTATION = "io.gpuship.release.record"


def record_manifest(record: ReleaseRecord, subject: dict[str, object]) -> bytes:
    """The artifact manifest for one record (its layer is `record.to_json()`)."""
    annotations = {
        "org.opencontainers.image.created": record.time.isoformat(),
        "io.gpuship.release.id": record.id,
    }
    return artifact_manifest(RECORD_TYPE, record.to_json(), annotations, subject)


def read_history_index(
    client: RegistryClient, repo: Repository, tag: str
) -> FetchedManifest | None:
    """The history index as stored now (None when the repository has no history yet)."""
    try:
        return client.get_manifest(repo.tag(tag))
    except NotFound:
        return None


def history_entries(
    fetched: FetchedManifest | None, repo: Repository, tag: str
) -> list[dict[str, object]]:
    if fetched is None:
        return []
    document = parse_manifest(fetched.data, fetched.media_type)
    if not isinstance(document, ImageIndex) or document.artifact_type != HISTORY_TYPE:
        raise InputError(
            f"{repo}:{tag} is not a gpuship release history; set release.history-tag to a free tag"
        )
    raw = json.loads(fetched.data)
    entries: list[dict[str, object]] = raw.get("manifests", [])
    return entries


def load_history(client: RegistryClient, repo: Repository, tag: str) -> list[ReleaseRecord]:
    """Every recorded release of `repo`, oldest first ([] if none was ever recorded)."""
    records: list[ReleaseRecord] = []
    for entry in history_entries(read_history_index(client, repo, tag), repo, tag):
        annotations = entry.get("annotations")
        text = annotations.get(RECORD_ANNOTATION) if isinstance(annotations, dict) else None
        try:
            if isinstance(text, str):
                records.append(ReleaseRecord.model_validate_json(text))
            else:
                records.append(_record_from_artifact(client, repo, str(entry.get("digest"))))
        except ValidationError as error:
            raise InputError(
                f"release history {repo}:{tag} holds an unreadable record "
                f"{entry.get('digest')}: {error.errors()[0]['msg']}"
            ) from None
    return records


def _record_from_artifact(client: RegistryClient, repo: Repository, digest: str) -> ReleaseRecord:
    fetched = client.get_manifest(repo.at(digest))
    document = json.loads(fetched.data)
    layer = document["layers"][0]["digest"]
    with client.open_blob(repo, layer) as reader:
        return ReleaseRecord.model_validate_json(reader.read())


def append_record(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    record: ReleaseRecord,
    subject: dict[str, object],
    limit: int,
    previous: FetchedManifest | None,
) -> str:
    """Store `record` in `repo` and add it to the history index read before as `previous`;
    returns the record's digest."""
    data = record.to_json()
    manifest = record_manifest(record, subject)
    digest = push_artifact(client, repo, manifest, data)
    entries = history_entries(previous, repo, tag)
    entries.append(
        {
            "mediaType": MEDIA_OCI_MANIFEST,
            "artifactType": RECORD_TYPE,
            "digest": digest,
            "size": len(manifest),
            "annotations": {
                RECORD_ANNOTATION: data.decode(),
                "io.gpuship.release.id": record.id,
            },
        }
    )
    index = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_OCI_INDEX,
            "artifactType": HISTORY_TYPE,
            "manifests": entries[-limit:],
        }
    )
    index_digest = client.put_manifest(repo.tag(tag), index, MEDIA_OCI_INDEX)
    now = client.resolve_digest(repo.tag(tag))
    if now != index_digest:
        raise DigestMismatch(
            f"release history {repo}:{tag} changed while it was written (now {now}); "
            "another release ran at the same time"
        )
    return digest


def find_release(records: list[ReleaseRecord], release_id: str) -> ReleaseRecord:
    """The record with `release_id` (InputError naming the known ids if absent)."""
    for record in records:
        if record.id == release_id:
            return record
    known = ", ".join(r.id for r in records[-5:]) or "none"
    raise InputError(f"no release {release_id!r} in the history (latest: {known})")
