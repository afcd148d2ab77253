"""prune against the real docker-registry: selection, protections, dry run and --apply."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from release_images import RunCli, dated_image

from bed import faults
from bed.oci import OCI_INDEX, Blob, Index, canonical_json, push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

CONFIG = """
release:
  retention:
    keep:
      - pattern: "nightly-.*"
        newest: 2
      - pattern: "pr-.*"
        younger-than-days: 15
"""


def _days_ago(days: int) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_prune_keeps_everything_protected(registry: Registry, run_cli: RunCli):
    repo = Repository(registry.host, "rel/prune")
    client = RegistryClient(environ={})
    nightly = {n: dated_image(f"nightly-{n}", _days_ago(60 - 10 * n)) for n in range(1, 6)}
    for n, image in nightly.items():
        push(registry.url, repo.name, image, tag=f"nightly-{n}")
    # nightly-2 is also `stable` (floating: protected).
    push(registry.url, repo.name, nightly[2], tag="stable")
    # nightly-1 is a child of the released index 1.0.0 (covered by no rule: kept).
    other = dated_image("arm", _days_ago(70))
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            nightly[1].manifest.descriptor(platform={"os": "linux", "architecture": "amd64"}),
            other.manifest.descriptor(platform={"os": "linux", "architecture": "arm64"}),
        ],
    }
    index = Index(Blob(OCI_INDEX, canonical_json(document)), (nightly[1], other))
    push(registry.url, repo.name, index, tag="1.0.0")
    # nightly-3 is signed: a referrer under the fallback tag sha256-<hex>.
    signature = dated_image("sig", _days_ago(1))
    signature_tag = nightly[3].digest.replace(":", "-") + ".sig"
    push(registry.url, repo.name, signature, tag=signature_tag)
    pr_old, pr_new = dated_image("pr-old", _days_ago(30)), dated_image("pr-new", _days_ago(5))
    push(registry.url, repo.name, pr_old, tag="pr-old")
    push(registry.url, repo.name, pr_new, tag="pr-new")
    # An old multi-platform PR image: the index goes, and so do its children nothing else uses.
    pr_children = (dated_image("pr-amd", _days_ago(40)), dated_image("pr-arm", _days_ago(40)))
    pr_document = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            child.manifest.descriptor(platform={"os": "linux", "architecture": arch})
            for child, arch in zip(pr_children, ("amd64", "arm64"), strict=True)
        ],
    }
    pr_index = Index(Blob(OCI_INDEX, canonical_json(pr_document)), pr_children)
    push(registry.url, repo.name, pr_index, tag="pr-multi")
    expected = {nightly[3].digest, pr_old.digest, signature.digest, pr_index.digest}
    expected |= {child.digest for child in pr_children}

    dry = run_cli("prune", str(repo), config=CONFIG)
    assert dry.code == 0, dry
    assert set(dry.report["result"]["selected"]) == expected
    assert dry.report["result"]["deleted"] == []
    reasons = {t["tag"]: t["reason"] for t in dry.report["result"]["tags"]}
    assert reasons["stable"] == "floating tag"
    assert reasons["1.0.0"] == "no keep rule covers it"
    assert "2 newest" in reasons["nightly-5"]
    assert client.head_manifest(repo.tag("nightly-3")) is not None  # dry run deleted nothing

    applied = run_cli("prune", str(repo), "--apply", config=CONFIG)
    assert applied.code == 0, applied
    assert set(applied.report["result"]["deleted"]) == expected
    for tag in ("nightly-3", "pr-old", signature_tag, "pr-multi"):
        assert client.head_manifest(repo.tag(tag)) is None
    for child in pr_children:
        assert client.head_manifest(repo.at(child.digest)) is None
    # Everything protected is still whole: tags, index children, their blobs.
    for tag, image in [
        ("nightly-4", nightly[4]),
        ("nightly-5", nightly[5]),
        ("stable", nightly[2]),
        ("nightly-2", nightly[2]),
        ("pr-new", pr_new),
    ]:
        assert client.resolve_digest(repo.tag(tag)) == image.digest
    assert client.resolve_digest(repo.tag("1.0.0")) == index.digest
    for child in (nightly[1], other):
        assert client.get_manifest(repo.at(child.digest)).data == child.manifest.data
        with client.open_blob(repo, child.layers[0].digest) as reader:
            assert reader.read() == child.layers[0].data
    assert client.resolve_digest(repo.tag("nightly-1")) == nightly[1].digest
    # Nothing left to prune: a second run selects nothing.
    assert run_cli("prune", str(repo), config=CONFIG).report["result"]["selected"] == []


def test_prune_keeps_release_history(registry: Registry, run_cli: RunCli):
    repo = Repository(registry.host, "rel/prune-history")
    old = dated_image("old", _days_ago(90))
    digest = push(registry.url, repo.name, old)
    promoted = run_cli("promote", f"{repo}@{digest}", "--tag", "ci-1", "--move", "stable")
    assert promoted.code == 0, promoted
    lone = dated_image("lone", _days_ago(80))
    lone_digest = push(registry.url, repo.name, lone)
    assert run_cli("promote", f"{repo}@{lone_digest}", "--tag", "ci-2").code == 0
    # A rule covering every tag: the record tags are still not retention's to delete.
    config = 'release: {retention: {keep: [{pattern: ".*", newest: 0}]}}'
    result = run_cli("prune", str(repo), "--apply", config=config)
    # ci-1 shares its digest with stable: kept. ci-2 goes; the history and its records stay.
    assert result.report["result"]["deleted"] == [lone_digest]
    assert not any(t["tag"].startswith("gpuship.releases") for t in result.report["result"]["tags"])
    client = RegistryClient(environ={})
    assert client.resolve_digest(repo.tag("ci-1")) == digest
    records = load_history(client, repo, "gpuship.releases").records
    assert [r.digest for r in records] == [digest, lone_digest]


def test_rules_config_turns_prune_notes_off(registry: Registry, run_cli: RunCli):
    repo = Repository(registry.host, "rel/prune-rules")
    old = dated_image("pr-old", _days_ago(30))
    push(registry.url, repo.name, old, tag="pr-old")
    config = 'release: {retention: {keep: [{pattern: "pr-.*", younger-than-days: 15}]}}\n'
    noted = run_cli("prune", str(repo), config=config)
    assert [(f["rule"], f["severity"]) for f in noted.report["findings"]] == [("GSR201", "note")]
    quiet = run_cli("prune", str(repo), config=config + "rules: {prune-delete: off}\n")
    assert quiet.code == 0 and quiet.report["findings"] == []
    assert quiet.report["result"]["selected"] == [old.digest]  # what retention chose stays


def test_prune_lists_the_repository_once(registry: Registry, run_cli: RunCli):
    """The history and the retention plan share one tag listing (a registry with thousands of
    tags pages it, so a second listing is many requests)."""
    name = "rel/prune-listing"
    for n in range(3):
        push(registry.url, name, dated_image(f"pr-{n}", _days_ago(30 + n)), tag=f"pr-{n}")
    config = 'release: {retention: {keep: [{pattern: "pr-.*", newest: 1}]}}\n'
    with faults.start(registry.host) as proxy:
        result = run_cli("prune", f"{proxy.host}/{name}", config=config)
    assert result.code == 0, result
    assert len(result.report["result"]["selected"]) == 2
    listings = [r for r in proxy.log if r.path.split("?")[0].endswith("/tags/list")]
    assert len(listings) == 1, [r.path for r in proxy.log]
