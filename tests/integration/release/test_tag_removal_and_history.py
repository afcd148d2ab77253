"""Tag removal without touching the manifest, and one tag per release record."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from release_images import RunCli, candidate_image

from bed.oci import OCI_INDEX, OCI_MANIFEST, Blob, Image, Index, Platform, canonical_json, push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release, remove_tag

pytestmark = pytest.mark.integration


def test_remove_tag_keeps_the_manifest_and_its_other_tags(registry: Registry):
    # registry:2 cannot DELETE a tag; the dummy-manifest method must not delete by the real digest.
    image = candidate_image("remove")
    digest = push(registry.url, "rel/remove", image, tag="keep")
    push(registry.url, "rel/remove", image, tag="drop")
    client = RegistryClient(environ={})
    repo = Repository(registry.host, "rel/remove")
    remove_tag(client, repo, "drop")
    assert client.head_manifest(repo.tag("drop")) is None
    assert client.resolve_digest(repo.tag("keep")) == digest
    assert client.get_manifest(repo.at(digest)).data == image.manifest.data
    assert "drop" not in client.list_tags(repo)


def test_each_record_is_its_own_tag_and_limit_reads_the_newest(registry: Registry):
    client = RegistryClient(environ={})
    repo = Repository(registry.host, "rel/bounded")
    config = ReleaseConfig.model_validate({"history-tag": "releases", "history-limit": 2})
    ids = []
    for n in range(3):
        digest = push(registry.url, repo.name, candidate_image(f"bounded-{n}"))
        outcome = release(
            client,
            ReleaseRequest(repo.at(digest), repo, (TagRequest("stable", TagKind.FLOATING),)),
            config,
            environ={},
            now=datetime.now(timezone.utc),
        )
        assert outcome.succeeded
        ids.append(outcome.record.id)
    # Written once each, never rewritten: one tag per record, nothing under `releases` itself.
    assert sorted(t for t in client.list_tags(repo) if t.startswith("releases")) == sorted(
        f"releases.{i}" for i in ids
    )
    assert [r.id for r in load_history(client, repo, "releases").records] == ids
    assert [r.id for r in load_history(client, repo, "releases", newest=2).records] == ids[1:]


RECORD_TYPE = "application/vnd.gpuship.release.v1+json"


def _legacy_artifact(record: dict[str, object]) -> tuple[Image, dict[str, object]]:
    """A record as gpuship stored it before per-record tags: an untagged artifact, listed by
    an index entry that carries the record JSON in an annotation."""
    text = json.dumps(record, separators=(",", ":")).encode()
    config = Blob("application/vnd.oci.empty.v1+json", b"{}")
    layer = Blob(RECORD_TYPE, text)
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": RECORD_TYPE,
        "config": config.descriptor(),
        "layers": [layer.descriptor()],
    }
    manifest = Blob(OCI_MANIFEST, canonical_json(document))
    entry = manifest.descriptor(
        artifactType=RECORD_TYPE,
        annotations={
            "io.gpuship.release.record": text.decode(),
            "io.gpuship.release.id": record["id"],
        },
    )
    return Image(manifest, config, (layer,), (), Platform()), entry


def _legacy_record(release_id: str, day: int, digest: str, before: str | None) -> dict[str, object]:
    return {
        "schema": "gpuship.release/v1",
        "id": release_id,
        "kind": "promote",
        "time": f"2026-01-{day:02d}T10:00:00+00:00",
        "repository": "legacy",
        "source": f"legacy@{digest}",
        "digest": digest,
        "media_type": OCI_MANIFEST,
        "tags": [
            {
                "tag": "stable",
                "kind": "floating",
                "before": before,
                "after": digest,
                "action": "move" if before else "create",
            }
        ],
    }


def test_history_written_before_per_record_tags_is_still_read(registry: Registry, run_cli: RunCli):
    repo = Repository(registry.host, "rel/legacy")
    first = push(registry.url, repo.name, candidate_image("legacy-a"))
    second = push(registry.url, repo.name, candidate_image("legacy-b"), tag="stable")
    records = [
        _legacy_record("20260101T100000Z-aaaaaa", 1, first, None),
        _legacy_record("20260102T100000Z-bbbbbb", 2, second, first),
    ]
    artifacts = [_legacy_artifact(record) for record in records]
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "artifactType": "application/vnd.gpuship.release-history.v1+json",
        "manifests": [entry for _, entry in artifacts],
    }
    legacy = Index(Blob(OCI_INDEX, canonical_json(document)), tuple(a for a, _ in artifacts))
    push(registry.url, repo.name, legacy, tag="gpuship.releases")
    # Rollback decides from the old history, and records itself the new way.
    rolled = run_cli("rollback", f"{repo}:stable")
    assert rolled.code == 0, rolled
    client = RegistryClient(environ={})
    assert client.resolve_digest(repo.tag("stable")) == first
    assert rolled.report["result"]["record"]["rollback_of"] == "20260102T100000Z-bbbbbb"
    listed = run_cli("history", f"{repo}:stable")
    ids = [r["id"] for r in listed.report["result"]["records"]]
    assert ids == [rolled.report["result"]["record"]["id"], *[r["id"] for r in records[::-1]]]
    # The old index is read, never written again.
    assert client.resolve_digest(repo.tag("gpuship.releases")) == legacy.digest
