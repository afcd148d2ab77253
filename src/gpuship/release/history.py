"""Release history kept in the released repository itself: one immutable artifact per release.

Registries offer no compare-and-swap on tags, so nothing here is ever rewritten: concurrent
releases cannot lose each other's records (DESIGN.md, many writers at once).

- Each record is an OCI artifact manifest: `artifactType` RECORD_TYPE, the empty config
  (`application/vnd.oci.empty.v1+json`, `{}`), one layer holding the record JSON, `subject` =
  the released image (registries with the referrers API list it under the image), and the
  record JSON again in the annotation RECORD_ANNOTATION, so one GET reads it.
- It is stored under its own tag, `<release.history-tag>.<release id>` (for example
  `gpuship.releases.20260301T120000Z-a1b2c3`), written once and never again: registries that
  hold tags immutable (ECR) accept it, and no superseded version is left behind (GHCR keeps
  every overwritten manifest as an untagged version).
- The history is the set of those tags (tags/list), read newest first. The current state of a
  tag is stored nowhere: it is the tag's actual digest, explained by the newest record that put
  the tag there (`explain`).
- Before it moves any tag, a release stores the same record as an intent (`state: intent`)
  under `<release.history-tag>.<release id>.intent`; once its tags are written it stores the
  complete record and removes the intent. An intent without its complete record is a release
  that is running or was interrupted (killed, the registry gone): history lists it as
  unfinished, rollback can undo what it moved, prune never deletes what it names, and the same
  command run again completes it.
- An intent is closed by appending, as everything here: the same record as `abandoned` under
  `<release.history-tag>.<release id>.closed`, once its release left nothing (undone, or each
  of its tags taken over by a later complete record or back where it was). Registries that
  delete no manifests (GHCR through the registry API, ECR) keep the intent, now paired like
  any completed one. Never under the record tag: a release closed while it still ran stores
  its complete record there all the same, and the closing PUT may land after it; a complete
  record outranks a closing one. (gpuship stored closing records under the record tag before;
  those are still read.)

Before this scheme the tag `<release.history-tag>` itself held one OCI index listing every
record, rewritten by every release (a lost update when two ran at once). It is still read, so
existing histories carry on, and never written again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from pydantic import ValidationError

from gpuship.documents import load_json
from gpuship.errors import GpushipError, InputError, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS
from gpuship.reference import Repository, sha256_digest
from gpuship.registry.artifact import artifact_manifest, ensure_empty_config, read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound, RegistryRequestError
from gpuship.registry.manifest import (
    MEDIA_OCI_MANIFEST,
    ImageIndex,
    ImageManifest,
    parse_manifest,
)
from gpuship.release.policy import TagAction
from gpuship.release.record import ReleaseRecord
from gpuship.release.signing import SIGNATURE_ANNOTATION, Signer, verified
from gpuship.release.targets import release_targets
from gpuship.release.trust import Trust, doubt

RECORD_TYPE = "application/vnd.gpuship.release.v1+json"
HISTORY_TYPE = "application/vnd.gpuship.release-history.v1+json"
RECORD_ANNOTATION = "io.gpuship.release.record"
# `new_release_id`: UTC time to the second, a dash, 6 hex digits.
RELEASE_ID_RE = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")


INTENT_SUFFIX = ".intent"
# A closing record has its own tag: a release closed while it still ran (no registry tells a
# live run from a dead one) stores its complete record later, and neither may replace the other.
CLOSED_SUFFIX = ".closed"


class StoredRecord(NamedTuple):
    """One history tag read: the record, its manifest digest, the record's JSON bytes as
    stored (what a signature covers) and its signature (None: unsigned)."""

    record: ReleaseRecord
    digest: str
    payload: bytes
    signature: str | None


@dataclass(frozen=True)
class History:
    """The complete records read, oldest first; the unfinished releases (intents without a
    complete or abandoned record), oldest first; the manifest digest of each history tag
    read; the abandoned releases (closed intents), oldest first; and, when keys were given,
    whether each history tag's record is signed by one (`signing.verified`; None: unsigned;
    the index of older versions is never signed)."""

    records: list[ReleaseRecord]
    artifacts: dict[str, str] = field(default_factory=dict)
    unfinished: list[ReleaseRecord] = field(default_factory=list)
    abandoned: list[ReleaseRecord] = field(default_factory=list)
    signed: dict[str, bool | None] = field(default_factory=dict)

    @property
    def entries(self) -> list[ReleaseRecord]:
        """Complete and unfinished releases together, oldest first: what moved the tags."""
        return sorted([*self.records, *self.unfinished], key=lambda r: (r.time, r.id))

    def vetted(self, prefix: str, trust: Trust) -> tuple[History, list[tuple[ReleaseRecord, str]]]:
        """This history without the records never to follow (`trust.doubt`: inconsistent in
        themselves, or not signed as `trust` requires), and those records with why."""
        doubts: list[tuple[ReleaseRecord, str]] = []

        def kept(records: list[ReleaseRecord]) -> list[ReleaseRecord]:
            keep = []
            for record in records:
                reason = doubt(record, self.signed.get(tag_of(prefix, record)), trust)
                if reason is None:
                    keep.append(record)
                else:
                    doubts.append((record, reason))
            return keep

        vetted = History(
            kept(self.records),
            self.artifacts,
            kept(self.unfinished),
            kept(self.abandoned),
            self.signed,
        )
        return vetted, sorted(doubts, key=lambda found: (found[0].time, found[0].id))


class RecordUncertain(RegistryUnavailable):
    """Storing a record failed in a way that leaves open whether it was stored."""

    def __init__(self, message: str, *, tag: str, digest: str) -> None:
        super().__init__(message)
        self.tag = tag
        self.digest = digest


def record_tag(prefix: str, release_id: str) -> str:
    """The tag of one record: `<history-tag>.<release id>`."""
    return f"{prefix}.{release_id}"


def record_id_of(prefix: str, tag: str) -> str | None:
    """The release id a record tag names, or None for any other tag."""
    head, dot, rest = tag.rpartition(".")
    if dot and head == prefix and RELEASE_ID_RE.fullmatch(rest):
        return rest
    return None


def intent_tag(prefix: str, release_id: str) -> str:
    """The tag of a release's intent: `<history-tag>.<release id>.intent`."""
    return record_tag(prefix, release_id) + INTENT_SUFFIX


def intent_id_of(prefix: str, tag: str) -> str | None:
    """The release id an intent tag names, or None for any other tag."""
    if not tag.endswith(INTENT_SUFFIX):
        return None
    return record_id_of(prefix, tag.removesuffix(INTENT_SUFFIX))


def closed_tag(prefix: str, release_id: str) -> str:
    """The tag of a release's closing record: `<history-tag>.<release id>.closed`."""
    return record_tag(prefix, release_id) + CLOSED_SUFFIX


def closed_id_of(prefix: str, tag: str) -> str | None:
    """The release id a closing record's tag names, or None for any other tag."""
    if not tag.endswith(CLOSED_SUFFIX):
        return None
    return record_id_of(prefix, tag.removesuffix(CLOSED_SUFFIX))


def is_history_tag(prefix: str, tag: str) -> bool:
    """True for the tags the history owns: records, intents, closing records, the old history
    index."""
    return tag == prefix or any(
        found(prefix, tag) is not None for found in (record_id_of, intent_id_of, closed_id_of)
    )


def tag_of(prefix: str, record: ReleaseRecord) -> str:
    """The tag `record` is stored under: its intent tag, its record tag once complete, its
    closing tag once abandoned."""
    if record.state == "intent":
        return intent_tag(prefix, record.id)
    if record.state == "abandoned":
        return closed_tag(prefix, record.id)
    return record_tag(prefix, record.id)


def _stored_under(prefix: str, record: ReleaseRecord, tag: str) -> bool:
    """`record` is where it belongs: `tag_of`, or (an abandoned one) the record tag, where
    gpuship stored closing records before they had their own tag."""
    legacy = record.state == "abandoned" and tag == record_tag(prefix, record.id)
    return tag == tag_of(prefix, record) or legacy


def record_manifest(
    record: ReleaseRecord, subject: dict[str, object], signer: Signer | None = None
) -> bytes:
    """The artifact manifest for one record (its layer is `record.to_json()`, its annotation
    the same JSON, so one GET reads it), signed by `signer` if given (deterministic: the same
    record and key give the same bytes, whichever run stores it)."""
    data = record.to_json()
    annotations = {
        "org.opencontainers.image.created": record.time.isoformat(),
        "io.gpuship.release.id": record.id,
        RECORD_ANNOTATION: data.decode(),
    }
    if signer is not None:
        annotations[SIGNATURE_ANNOTATION] = signer.sign(data)
    return artifact_manifest(RECORD_TYPE, data, annotations, subject)


def store_record(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    record: ReleaseRecord,
    subject: dict[str, object],
    *,
    config_present: bool = False,
    signer: Signer | None = None,
) -> str:
    """Store `record` under its own tag (`tag_of`: an intent under its intent tag), signed by
    `signer` if given; returns the record manifest's digest. `config_present`: the empty
    config blob is known to be in `repo` (a release's intent, stored just before, put it
    there).

    A PUT that fails may still have landed (its answer lost; a registry holding tags immutable,
    ECR, then refuses the retry), so the tag is read before giving up. Raises the error that
    stopped it when the record is certainly not stored, RecordUncertain when that read failed.
    """
    manifest = record_manifest(record, subject, signer)
    digest = sha256_digest(manifest)
    tag = tag_of(prefix, record)
    if not config_present:
        ensure_empty_config(client, repo)
    client.push_blob(repo, record.to_json())
    try:
        client.put_manifest(repo.tag(tag), manifest, MEDIA_OCI_MANIFEST)
    except GpushipError as error:
        try:
            # A GET, checked against the bytes (a HEAD's digest header is taken on trust).
            found = client.get_manifest(repo.tag(tag)).digest
        except NotFound:
            raise error from None
        except GpushipError:
            raise RecordUncertain(
                f"storing release record {repo}:{tag} failed ({error}); whether it was "
                "stored is unknown: the registry did not answer",
                tag=tag,
                digest=digest,
            ) from None
        if found != digest:
            raise
    return digest


def delete_record(client: RegistryClient, repo: Repository, tag: str, digest: str) -> None:
    """Remove the record of a release that was undone: manifest `digest` under `tag`, both
    its alone."""
    try:
        client.delete_manifest(repo.at(digest))
    except NotFound:
        return
    except RegistryRequestError as error:
        if error.status not in (400, 405):
            raise
        client.delete_manifest(repo.tag(tag))  # Docker Hub deletes tags, not digests


def load_history(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    *,
    newest: int | None = None,
    tags: Sequence[str] | None = None,
    keys: Sequence[str] = (),
) -> History:
    """The records of `repo`, oldest first: the `newest` N record tags (all when None) and the
    index of before per-record tags, and the newest N unfinished releases; empty when nothing
    was ever recorded. `tags`: the repository's tag list, when the caller has just read it
    (else it is listed here). `keys`: PEM public keys each record's signature is checked
    against (`History.signed`)."""
    if tags is None:
        try:
            tags = client.list_tags(repo)
        except NotFound:
            return History([])
    named = sorted(tag for tag in tags if record_id_of(prefix, tag) is not None)
    closed = sorted(tag for tag in tags if closed_id_of(prefix, tag) is not None)
    intents = _unpaired_intents(prefix, tags)
    if newest is not None:
        named, closed = _newest(named, newest), _newest(closed, newest)
        intents = _newest(intents, newest)
    wanted = [*named, *closed, *intents]
    read = read_each(partial(read_history_tag, client, repo, prefix), wanted)
    stored = [found for found in read if found is not None]
    records = {
        found.record.id: found.record for found in stored if found.record.state == "complete"
    }
    artifacts = {tag: found.digest for tag, found in zip(wanted, read, strict=True) if found}
    signed = (
        {tag_of(prefix, f.record): verified(f.payload, f.signature, keys) for f in stored}
        if keys
        else {}
    )
    if prefix in tags:
        for record in _legacy_records(client, repo, prefix):
            records.setdefault(record.id, record)
    # A complete record outranks a closing one: the release was closed while it still ran.
    abandoned = {
        f.record.id: f.record
        for f in stored
        if f.record.state == "abandoned" and f.record.id not in records
    }
    unfinished = [
        f.record
        for f in stored
        if f.record.state == "intent" and f.record.id not in records | abandoned.keys()
    ]
    ordered = _ordered(records.values(), newest)
    return History(
        ordered,
        artifacts,
        _ordered(unfinished, newest),
        _ordered(abandoned.values(), newest),
        signed,
    )


def unfinished_releases(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    tags: Sequence[str],
    trust: Trust | None = None,
) -> list[ReleaseRecord]:
    """The intents in `tags` without a complete record, oldest first: one read each, the
    complete records are not read. `trust`: leave out the intents never to follow
    (`trust.doubt`); None keeps them all (prune: whatever names a digest protects it)."""
    read_tag = partial(read_history_tag, client, repo, prefix)
    read = read_each(read_tag, _unpaired_intents(prefix, tags))
    return _ordered(_trusted(filter(None, read), trust), None)


def _trusted(stored: Iterable[StoredRecord], trust: Trust | None) -> Iterable[ReleaseRecord]:
    for found in stored:
        signed = verified(found.payload, found.signature, trust.keys) if trust else None
        if trust is None or doubt(found.record, signed, trust) is None:
            yield found.record


def records_since(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    tags: Sequence[str],
    oldest: ReleaseRecord,
    trust: Trust | None = None,
) -> list[ReleaseRecord]:
    """The complete records in `tags` stored since `oldest` started, oldest first: the record
    tags of its second and later (an id orders by time to the second only), read once each;
    without those never to follow (`trust`, as in `unfinished_releases`)."""
    second = oldest.id.rsplit("-", 1)[0]
    named = [
        tag
        for tag in tags
        if (found := record_id_of(prefix, tag)) and found.rsplit("-", 1)[0] >= second
    ]
    read = read_each(partial(read_history_tag, client, repo, prefix), named)
    complete = (r for r in _trusted(filter(None, read), trust) if r.state == "complete")
    return _ordered(complete, None)


def close_intent(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    intent: ReleaseRecord,
    subject: dict[str, object],
    intent_digest: str | None,
    signer: Signer | None = None,
) -> None:
    """Close `intent` (its release left nothing): store it as `abandoned` under its closing
    tag (signed by `signer`, if given), then remove the intent tag (`intent_digest`: its
    manifest, when known) where the registry deletes manifests. Either one closes it: a
    refused or failed removal is no matter once the record is stored (the pair reads as
    closed), nor a record refused once the intent is removed. Raises when neither was done.
    The closing tag is never the record tag: a release closed while it still ran stores its
    complete record there, before or after this, and that record outranks the closing one."""
    try:
        store_record(client, repo, prefix, intent.as_state("abandoned"), subject, signer=signer)
    except GpushipError:
        if intent_digest is None:
            raise
        delete_record(client, repo, intent_tag(prefix, intent.id), intent_digest)
        return
    if intent_digest is None:
        return
    try:
        delete_record(client, repo, intent_tag(prefix, intent.id), intent_digest)
    except GpushipError:
        return


def close_unfinished(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    intent: ReleaseRecord,
    signer: Signer | None = None,
) -> bool:
    """Close an unfinished release another run left (`close_intent`), its record referring to
    the image its intent refers to; False when its intent has gone meanwhile (completed or
    closed by another run)."""
    try:
        fetched = client.get_manifest(repo.tag(intent_tag(prefix, intent.id)))
    except NotFound:
        return False
    document = parse_manifest(fetched.data, fetched.media_type)
    subject = document.subject
    if subject is None:
        raise InputError(f"{repo}:{intent_tag(prefix, intent.id)} names no released image")
    image = {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size}
    close_intent(client, repo, prefix, intent, image, fetched.digest, signer)
    return True


def _unpaired_intents(prefix: str, tags: Iterable[str]) -> list[str]:
    """The intent tags with neither a record tag nor a closing tag beside them."""
    tags = list(tags)
    paired = {found(prefix, tag) for tag in tags for found in (record_id_of, closed_id_of)}
    return sorted(
        tag for tag in tags if (found := intent_id_of(prefix, tag)) and found not in paired
    )


def _ordered(records: Iterable[ReleaseRecord], newest: int | None) -> list[ReleaseRecord]:
    ordered = sorted(records, key=lambda r: (r.time, r.id))
    if newest is not None:
        ordered = ordered[-newest:] if newest > 0 else []
    return ordered


def _newest(tags: list[str], count: int) -> list[str]:
    """The last `count` of sorted record tags, and every other tag of the same second as the
    first of them: a release id orders by time only to the second (then by a random suffix),
    so which of those is newer is known from the records' times, once read."""
    if count <= 0 or not tags:
        return []
    if count >= len(tags):
        return tags
    second = tags[-count].rsplit("-", 1)[0]
    return [tag for tag in tags if tag.rsplit("-", 1)[0] >= second]


def read_history_tag(
    client: RegistryClient, repo: Repository, prefix: str, tag: str
) -> StoredRecord | None:
    """The record (or intent) under `tag`, its manifest digest and signature; None if the tag
    went away meanwhile (an intent is removed once its release is complete)."""
    where = f"{repo}:{tag}"
    try:
        fetched = client.get_manifest(repo.tag(tag))
    except NotFound:
        return None
    document = parse_manifest(fetched.data, fetched.media_type)
    if not isinstance(document, ImageManifest) or document.artifact_type != RECORD_TYPE:
        raise InputError(
            f"{where} is named like a release record but holds something else; remove that "
            "tag or set release.history-tag to another prefix"
        )
    payload = _payload_of(client, repo, document, where)
    record = _parse_record(payload, where)
    if not _stored_under(prefix, record, tag):
        raise InputError(
            f"{where} holds the {record.state} record of release {record.id}, not its own"
        )
    signature = document.annotations.get(SIGNATURE_ANNOTATION)
    return StoredRecord(record, fetched.digest, payload, signature)


def _payload_of(
    client: RegistryClient, repo: Repository, document: ImageManifest, where: str
) -> bytes:
    """The record's JSON bytes as stored: its annotation, else its layer."""
    text = document.annotations.get(RECORD_ANNOTATION)
    if text is not None:
        return text.encode()
    if not document.layers:
        raise InputError(f"release record {where} has no content")
    return client.read_blob(repo, document.layers[0].digest)


def _record_of(
    client: RegistryClient, repo: Repository, document: ImageManifest, where: str
) -> ReleaseRecord:
    return _parse_record(_payload_of(client, repo, document, where), where)


def _parse_record(data: bytes, where: str) -> ReleaseRecord:
    load_json(data, f"release record {where}", DEFAULT_LIMITS)  # depth, syntax: a clear error
    try:
        return ReleaseRecord.model_validate_json(data)
    except ValidationError as error:
        raise InputError(
            f"release record {where} is unreadable: {error.errors()[0]['msg']}"
        ) from None


def _legacy_records(client: RegistryClient, repo: Repository, tag: str) -> list[ReleaseRecord]:
    """Records listed by the index that the tag `<history-tag>` held before per-record tags.

    Anything else under that tag is not a history and holds no records.
    """
    try:
        fetched = client.get_manifest(repo.tag(tag))
    except NotFound:
        return []
    document = parse_manifest(fetched.data, fetched.media_type)
    if not isinstance(document, ImageIndex) or document.artifact_type != HISTORY_TYPE:
        return []
    records = []
    for entry in document.manifests:
        where = f"{repo}:{tag} entry {entry.digest}"
        text = entry.annotations.get(RECORD_ANNOTATION)
        if text is not None:
            records.append(_parse_record(text.encode(), where))
            continue
        artifact = client.get_manifest(repo.at(entry.digest))
        parsed = parse_manifest(artifact.data, artifact.media_type)
        if not isinstance(parsed, ImageManifest):
            raise InputError(f"release history {where} is not a record")
        records.append(_record_of(client, repo, parsed, where))
    return records


def gone_digests(
    client: RegistryClient, repo: Repository, records: Sequence[ReleaseRecord]
) -> frozenset[str]:
    """The digests `records` name (each release's own, and those it moved a floating tag
    from: `targets.release_targets`) that `repo` no longer holds. One HEAD per distinct
    digest, READ_WORKERS at a time: at most one plus one per floating tag moved, per record."""
    named = {record.digest for record in records}
    named |= {target.digest for record in records for target in release_targets(record)}
    digests = sorted(named)
    heads = read_each(lambda digest: client.head_manifest(repo.at(digest)), digests)
    return frozenset(d for d, head in zip(digests, heads, strict=True) if head is None)


def explain(records: Sequence[ReleaseRecord], tag: str, digest: str) -> ReleaseRecord | None:
    """The newest record that left `tag` at `digest` (moved, created, or found it there)."""
    for record in reversed(records):
        for change in record.tags:
            wrote = change.action is not TagAction.CONFLICT
            if change.tag == tag and change.after == digest and wrote:
                return record
    return None


def find_release(records: Iterable[ReleaseRecord], release_id: str) -> ReleaseRecord:
    """The record with `release_id` (InputError naming the known ids if absent)."""
    known = list(records)
    for record in known:
        if record.id == release_id:
            return record
    latest = ", ".join(r.id for r in known[-5:]) or "none"
    raise InputError(f"no release {release_id!r} in the history (latest: {latest})")
