"""The fleet inventory: one audit per runner, kept in a registry repository as OCI artifacts.

Layout (no state outside the registry, nothing ever rewritten by two runners):

- each runner owns one tag, `runner-<first 24 hex of sha256(hostname NUL runner name)>`, so
  runners publishing at the same moment never touch each other's entries (registries have no
  compare-and-swap; a shared index would lose updates);
- the tag points at an artifact (`artifactType` AUDIT_TYPE, empty config, one layer: the audit
  JSON) whose annotations carry the audit too, so reading an entry is one manifest GET;
- publishing pushes the layer and the manifest by digest first and moves the runner's tag last:
  a failure before that leaves the previous entry as it was;
- reading lists the tags (`/tags/list`, paged) and fetches the `runner-` ones: read access only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial

from gpuship.compat.audit import HostAudit, RunnerIdentity, audit_from_document
from gpuship.errors import EnvironmentUnavailable, GpushipError, InputError, RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.artifact import artifact_manifest, canonical_json, push_artifact, read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound
from gpuship.registry.manifest import MEDIA_OCI_MANIFEST

AUDIT_TYPE = "application/vnd.gpuship.audit.v1+json"
ENTRY_PREFIX = "runner-"
AUDIT_ANNOTATION = "io.gpuship.audit"
RUNNER_ANNOTATION = "io.gpuship.runner"
CREATED_ANNOTATION = "org.opencontainers.image.created"
# A registry rejects manifests past a few MiB (distribution: 4 MiB); an audit of 8 GPUs with
# MIG is a few KiB, so anything near this is not an audit.
MAX_ENTRY_BYTES = 1 << 20


def entry_tag(runner: RunnerIdentity) -> str:
    """The tag this runner's audit lives under (stable across audits, unique per runner)."""
    key = f"{runner.hostname}\0{runner.runner_name or ''}".encode()
    return ENTRY_PREFIX + hashlib.sha256(key).hexdigest()[:24]


@dataclass(frozen=True)
class InventoryEntry:
    """One runner's latest published audit."""

    tag: str
    digest: str
    audit: HostAudit

    @property
    def taken_at(self) -> datetime:
        return audit_time(self.audit)


@dataclass(frozen=True)
class Inventory:
    """Every readable entry, and the entries that could not be read (with why)."""

    repository: str
    entries: tuple[InventoryEntry, ...]
    unreadable: tuple[tuple[str, str], ...] = ()


def audit_time(audit: HostAudit) -> datetime:
    """When the audit was taken (UTC; a time without zone is read as UTC)."""
    moment = datetime.fromisoformat(audit.taken_at)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def read_entry(client: RegistryClient, repo: Repository, tag: str) -> InventoryEntry | None:
    """The entry under `tag`, or None when there is none. A broken entry is an InputError."""
    try:
        fetched = client.get_manifest(repo.tag(tag))
    except NotFound:
        return None
    where = f"{repo}:{tag}"
    if len(fetched.data) > MAX_ENTRY_BYTES:
        raise InputError(f"{where}: {len(fetched.data)} bytes is not a gpuship audit entry")
    try:
        manifest = json.loads(fetched.data)
    except ValueError:
        raise InputError(f"{where}: manifest is not JSON") from None
    annotations = manifest.get("annotations") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("artifactType") != AUDIT_TYPE:
        raise InputError(f"{where}: not a gpuship audit entry (artifactType is not {AUDIT_TYPE})")
    text = annotations.get(AUDIT_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        raise InputError(f"{where}: the entry carries no {AUDIT_ANNOTATION} annotation")
    try:
        document = json.loads(text)
    except ValueError:
        raise InputError(f"{where}: the audit annotation is not JSON") from None
    return InventoryEntry(tag, fetched.digest, audit_from_document(document, where))


def read_inventory(client: RegistryClient, repo: Repository) -> Inventory:
    """Every runner's entry. An entry that cannot be read is listed, not fatal: one broken
    runner must not stop routing for the others."""
    try:
        tags = client.list_tags(repo)
    except NotFound:
        raise InputError(
            f"no fleet inventory at {repo}: publish audits there with "
            f"'gpuship audit --publish {repo}' on each GPU runner"
        ) from None
    names = sorted(t for t in tags if t.startswith(ENTRY_PREFIX))
    entries: list[InventoryEntry] = []
    unreadable: list[tuple[str, str]] = []
    for tag, read in zip(names, read_each(partial(_read_or_why, client, repo), names), strict=True):
        if isinstance(read, str):
            unreadable.append((tag, read))
        elif read is not None:  # None: deleted between the listing and the read
            entries.append(read)
    return Inventory(str(repo), tuple(entries), tuple(unreadable))


def _read_or_why(client: RegistryClient, repo: Repository, tag: str) -> InventoryEntry | str | None:
    """The entry under `tag`, None when gone, or why it cannot be read."""
    try:
        return read_entry(client, repo, tag)
    except InputError as error:
        return str(error)


@dataclass(frozen=True)
class PublishedEntry:
    """What `publish_audit` did."""

    tag: str
    digest: str
    previous: InventoryEntry | None


def entry_manifest(audit: HostAudit) -> tuple[bytes, bytes]:
    """(manifest, layer) of the artifact holding `audit`."""
    data = canonical_json(audit.model_dump(mode="json"))
    runner = audit.runner
    annotations = {
        CREATED_ANNOTATION: audit.taken_at,
        RUNNER_ANNOTATION: runner.runner_name or runner.hostname,
        AUDIT_ANNOTATION: data.decode(),
    }
    return artifact_manifest(AUDIT_TYPE, data, annotations), data


def publish_audit(
    client: RegistryClient,
    repo: Repository,
    audit: HostAudit,
    previous: InventoryEntry | None,
) -> PublishedEntry:
    """Store `audit` as this runner's entry, replacing `previous` (read before by the caller).

    On failure the error says what the registry holds: the previous entry untouched when the
    failure came before the tag moved, unknown when the tag request itself failed.
    """
    tag = entry_tag(audit.runner)
    manifest, data = entry_manifest(audit)
    try:
        digest = push_artifact(client, repo, manifest, data)
    except GpushipError as error:
        kept = (
            f"the entry still holds the audit taken {previous.audit.taken_at}"
            if previous
            else "no entry was created"
        )
        raise _publish_error(repo, tag, error, kept) from None
    try:
        client.put_manifest(repo.tag(tag), manifest, MEDIA_OCI_MANIFEST)
    except GpushipError as error:
        raise _publish_error(
            repo, tag, error, "the entry may or may not hold the new audit; publish again"
        ) from None
    return PublishedEntry(tag, digest, previous)


def _publish_error(repo: Repository, tag: str, error: GpushipError, state: str) -> GpushipError:
    message = f"audit not published to {repo}:{tag}: {error}; {state}"
    if isinstance(error, EnvironmentUnavailable):
        return RegistryUnavailable(message)
    return InputError(message)
