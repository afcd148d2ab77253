"""Tag removal without touching the manifest, and the bounded history index."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from release_images import candidate_image

from bed.oci import push
from bed.registry import Registry
from gpuship.registry.client import RegistryClient
from gpuship.registry.reference import Repository
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


def test_history_index_keeps_the_newest_records(registry: Registry):
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
    assert [r.id for r in load_history(client, repo, "releases")] == ids[1:]
