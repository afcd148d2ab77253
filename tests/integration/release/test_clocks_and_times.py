"""Clocks and times that are not what gpuship writes, against the real registry: a release
stopped on a runner whose clock ran an hour fast is closed by the next release of its tags
(before, history listed it UNFINISHED forever), and a record or an image `created` time
without an offset (RFC 3339 section 5.6 requires one; the OCI image spec's config.md says
`created` is RFC 3339) no longer makes history, rollback and prune exit 4 for the whole
repository: a record's is read as UTC, an image's as unknown (retention keeps the tag)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from release_images import RunCli, candidate_image, dated_image, stable_and_candidate, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.errors import GpushipError
from gpuship.reference import Repository
from gpuship.registry.artifact import artifact_manifest, ensure_empty_config
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import MEDIA_OCI_MANIFEST
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import RECORD_ANNOTATION, RECORD_TYPE, load_history, record_tag
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release

pytestmark = pytest.mark.integration

PREFIX = "gpuship.releases"


def test_a_release_stopped_on_a_fast_clock_is_closed_by_the_next_one(
    registry: Registry, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "clock/fast")
    newer = push(registry.url, repo.name, candidate_image("clock-fast-newer"))

    def gone_at_record(index: int, method: str, path: str) -> str | None:
        stores_record = f"/manifests/{PREFIX}." in path and not path.endswith(".intent")
        return "gone" if method == "PUT" and stores_record else None

    fast = datetime.now(timezone.utc) + timedelta(hours=1)
    with faults.start(registry.host, hook=gone_at_record) as proxy:
        via = Repository(proxy.host, repo.name)
        request = ReleaseRequest(via.at(new), via, (TagRequest("stable", TagKind.FLOATING),))
        client = RegistryClient(environ={"GPUSHIP_REGISTRIES__ATTEMPTS": "1"})
        with pytest.raises(GpushipError):
            # The registry goes away at the record: nothing can be put back, the intent stays.
            outcome = release(client, request, ReleaseConfig(), environ={}, now=fast)
            raise GpushipError(outcome.error or "")
    direct = RegistryClient(environ={})
    (stopped,) = load_history(direct, repo, PREFIX).unfinished
    assert stopped.time == fast and tag_digest(direct, repo, "stable") == new
    # The next release of stable, on a right clock, takes stable over and closes it.
    later = run_cli("promote", f"{repo}@{newer}", "--move", "stable")
    assert later.code == 0, later
    assert stopped.id in later.report["headline"]
    history = load_history(direct, repo, PREFIX)
    assert not history.unfinished
    assert [r.id for r in history.abandoned] == [stopped.id]
    assert old != new


def _plant_unqualified_record(client: RegistryClient, repo: Repository, digest: str, old: str):
    """A record whose time has no offset, as a tool other than gpuship might write one."""
    release_id = "20260102T030405Z-abcdef"
    document = {
        "schema": "gpuship.release/v1",
        "id": release_id,
        "kind": "promote",
        "time": "2026-01-02T03:04:05",
        "repository": str(repo),
        "source": f"{repo}@{digest}",
        "digest": digest,
        "media_type": MEDIA_OCI_MANIFEST,
        "tags": [
            {"tag": "stable", "kind": "floating", "before": old, "after": digest, "action": "move"}
        ],
    }
    data = json.dumps(document).encode()
    subject = client.get_manifest(repo.at(digest))
    image = {"mediaType": subject.media_type, "digest": subject.digest, "size": len(subject.data)}
    ensure_empty_config(client, repo)
    client.push_blob(repo, data)
    manifest = artifact_manifest(RECORD_TYPE, data, {RECORD_ANNOTATION: data.decode()}, image)
    client.put_manifest(repo.tag(record_tag(PREFIX, release_id)), manifest, MEDIA_OCI_MANIFEST)
    return release_id


def test_a_record_time_without_an_offset_is_read_as_utc(registry: Registry, run_cli: RunCli):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "clock/naive-record")
    client = RegistryClient(environ={})
    assert run_cli("promote", f"{repo}@{new}", "--move", "stable").code == 0
    planted = _plant_unqualified_record(client, repo, new, old)
    listed = run_cli("history", str(repo))
    assert listed.code == 0, listed
    times = {r["id"]: r["time"] for r in listed.report["result"]["records"]}
    assert times[planted].startswith("2026-01-02T03:04:05") and times[planted].endswith(
        ("Z", "+00:00")
    )
    rolled = run_cli("rollback", f"{repo}:stable")
    assert rolled.code == 0, rolled
    assert tag_digest(client, repo, "stable") == old
    pruned = run_cli("prune", str(repo), config="release:\n  retention:\n    keep: []\n")
    assert pruned.code == 0, pruned


def test_an_image_created_without_an_offset_has_an_unknown_age(registry: Registry, run_cli: RunCli):
    name = "clock/naive-image"
    image = dated_image("clock-naive", "2020-01-01T00:00:00")
    push(registry.url, name, image, tag="sha-0000001")
    config = (
        'release:\n  retention:\n    keep:\n      - pattern: "sha-.*"\n'
        "        younger-than-days: 30\n"
    )
    result = run_cli("prune", f"{registry.host}/{name}", config=config)
    assert result.code == 0, result
    decisions = {t["tag"]: t for t in result.report["result"]["tags"]}
    assert "creation time is unknown" in str(decisions["sha-0000001"])
    assert result.report["result"]["selected"] == []
