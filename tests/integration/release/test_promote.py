"""promote / rollback / history end to end against the real docker-registry (distribution 2.8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from release_images import RunCli, candidate_image, candidate_index, push_candidate

from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import ImageIndex, parse_manifest
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"


def _digest_of(client: RegistryClient, repo: Repository, tag: str) -> str | None:
    head = client.head_manifest(repo.tag(tag))
    return head.digest if head is not None else None


def _assert_first_release(
    client: RegistryClient, repo: Repository, data: bytes, digest: str, record_file: Path
) -> None:
    """Exact bytes under the tags: same digest, still an index with its attestation entries;
    the record names the release and its GitHub run."""
    fetched = client.get_manifest(repo.tag("1.0.0"))
    assert fetched.data == data
    assert _digest_of(client, repo, "stable") == digest
    document = parse_manifest(fetched.data, fetched.media_type)
    assert isinstance(document, ImageIndex)
    assert sum(d.is_attestation for d in document.manifests) == 2
    record = json.loads(record_file.read_text())
    assert record["digest"] == digest
    assert record["actor"] == "octo"
    assert record["run_url"] == "https://github.com/o/r/actions/runs/42"
    assert {c["tag"]: c["action"] for c in record["tags"]} == {
        "stable": "create",
        "1.0.0": "create",
    }


def test_promote_index_same_repo_then_move_and_roll_back(
    registry: Registry, run_cli: RunCli, tmp_path: Path
):
    repo = Repository(registry.host, "rel/same")
    client = RegistryClient(environ={})
    first = candidate_index("first")
    first_digest = push_candidate(registry.url, repo.name, first)
    record_file = tmp_path / "record.json"
    instructions = tmp_path / "rollback.md"
    result = run_cli(
        "promote",
        registry.ref(repo.name, first_digest),
        "--tag",
        "1.0.0",
        "--move",
        "stable",
        "--record-file",
        str(record_file),
        "--instructions-file",
        str(instructions),
        environ={
            "GITHUB_ACTOR": "octo",
            "GITHUB_SHA": "abc123",
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_RUN_ID": "42",
        },
    )
    assert result.code == 0, result
    _assert_first_release(client, repo, first.manifest.data, first_digest, record_file)

    # Same command again: a no-op, nothing recorded twice.
    again = run_cli(
        "promote", registry.ref(repo.name, first_digest), "--tag", "1.0.0", "--move", "stable"
    )
    assert again.code == 0
    assert len(load_history(client, repo, HISTORY_TAG).records) == 1

    # Second release moves stable; its record keeps the previous digest.
    second = candidate_index("second")
    second_digest = push_candidate(registry.url, repo.name, second)
    moved = run_cli(
        "promote",
        registry.ref(repo.name, second_digest),
        "--tag",
        "1.1.0",
        "--move",
        "stable",
        "--record-file",
        str(record_file),
        "--instructions-file",
        str(instructions),
    )
    assert moved.code == 0, moved
    assert _digest_of(client, repo, "stable") == second_digest
    text = instructions.read_text()
    assert f"gpuship rollback {repo}:stable" in text
    assert f"crane tag {repo}@{first_digest} stable" in text
    assert "skopeo copy --all --preserve-digests" in text

    # Immutable tag already at another digest: refused, exit 1, nothing written.
    refused = run_cli(
        "promote", registry.ref(repo.name, second_digest), "--tag", "1.0.0", "--move", "prod"
    )
    assert refused.code == 1
    assert _digest_of(client, repo, "1.0.0") == first_digest
    assert _digest_of(client, repo, "prod") is None
    assert [f["rule"] for f in refused.report["findings"]] == ["GSR101"]

    # Rollback with no --to: back to the digest before the last recorded move, and recorded.
    rolled = run_cli("rollback", f"{repo}:stable")
    assert rolled.code == 0, rolled
    assert _digest_of(client, repo, "stable") == first_digest
    history = load_history(client, repo, HISTORY_TAG).records
    assert [r.kind for r in history] == ["promote", "promote", "rollback"]
    assert history[-1].rollback_of == history[1].id
    # Roll forward again to a recorded release id.
    forward = run_cli("rollback", f"{repo}:stable", "--to", history[1].id)
    assert forward.code == 0
    assert _digest_of(client, repo, "stable") == second_digest
    # Version tags are never moved by rollback.
    assert run_cli("rollback", f"{repo}:1.0.0").code == 2

    listed = run_cli("history", f"{repo}:stable")
    assert listed.code == 0
    ids = [r["id"] for r in listed.report["result"]["records"]]
    assert ids == [r.id for r in reversed(load_history(client, repo, HISTORY_TAG).records)]
    assert listed.report["result"]["current_digest"] == second_digest


def test_promote_cross_repo_and_cross_registry(
    registry: Registry, registry_basic_auth: Registry, run_cli: RunCli
):
    source = Repository(registry.host, "rel/candidates")
    index = candidate_index("cross")
    digest = push_candidate(registry.url, source.name, index)
    same_registry = run_cli(
        "promote",
        registry.ref(source.name, digest),
        "--tag",
        "2.0.0",
        "--to",
        f"{registry.host}/rel/public",
    )
    assert same_registry.code == 0, same_registry
    assert same_registry.report["result"]["copy"]["blobs"]["mounted"] > 0
    assert same_registry.report["result"]["copy"]["blobs"]["copied"] == 0
    client = RegistryClient(environ={})
    assert client.get_manifest(Repository(registry.host, "rel/public").tag("2.0.0")).data == (
        index.manifest.data
    )
    # Across registries (basic auth on the target): blobs are streamed.
    single = candidate_image("far", 300_000)
    single_digest = push_candidate(registry.url, source.name, single)
    environ = registry_basic_auth.credential_env()
    far = run_cli(
        "promote",
        registry.ref(source.name, single_digest),
        "--tag",
        "3.0.0",
        "--move",
        "latest",
        "--to",
        f"{registry_basic_auth.host}/rel/far",
        environ=environ,
    )
    assert far.code == 0, far
    assert far.report["result"]["copy"]["blobs"]["copied"] == 2
    authed = RegistryClient(environ=environ)
    far_repo = Repository(registry_basic_auth.host, "rel/far")
    assert authed.resolve_digest(far_repo.tag("latest")) == single_digest
    assert load_history(authed, far_repo, HISTORY_TAG).records[0].digest == single_digest


def test_bad_input_is_exit_2(registry: Registry, run_cli: RunCli):
    image = candidate_image("bad")
    digest = push_candidate(registry.url, "rel/bad", image)
    by_tag = run_cli("promote", registry.ref("rel/bad", "latest"), "--move", "stable")
    assert by_tag.code == 2
    assert "by digest" in by_tag.stderr
    version_moved = run_cli("promote", registry.ref("rel/bad", digest), "--move", "1.2.3")
    assert version_moved.code == 2
    assert "immutable" in version_moved.stderr
    nothing = run_cli("promote", registry.ref("rel/bad", digest))
    assert nothing.code == 2
    unknown = run_cli("promote", registry.ref("rel/bad", "sha256:" + "0" * 64), "--move", "x")
    assert unknown.code == 2
    assert "Traceback" not in unknown.stderr


def test_foreign_image_at_the_old_history_tag_is_not_a_history(registry: Registry, run_cli: RunCli):
    # Before per-record tags the history lived at `gpuship.releases`; anything else there is
    # someone's image: left alone, and the release is recorded under its own tag.
    repo = Repository(registry.host, "rel/foreign")
    squatter = push(registry.url, repo.name, candidate_image("squatter"), tag=HISTORY_TAG)
    digest = push_candidate(registry.url, repo.name, candidate_image("foreign"))
    result = run_cli("promote", f"{repo}@{digest}", "--tag", "1.0.0", "--move", "stable")
    assert result.code == 0, result
    client = RegistryClient(environ={})
    assert _digest_of(client, repo, HISTORY_TAG) == squatter
    record_id = result.report["result"]["record"]["id"]
    assert f"{HISTORY_TAG}.{record_id}" in client.list_tags(repo)
    assert [r.id for r in load_history(client, repo, HISTORY_TAG).records] == [record_id]


def test_the_job_summary_holds_the_rollback_instructions(
    registry: Registry, run_cli: RunCli, tmp_path: Path
):
    # actions/promote used to append them to the summary itself; gpuship writes them now.
    repo = Repository(registry.host, "rel/summary")
    digests = [push_candidate(registry.url, repo.name, candidate_image(n)) for n in ("a", "b")]
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    for digest in digests:
        promoted = run_cli("promote", registry.ref(repo.name, digest), "--move", "stable")
        assert promoted.code == 0, promoted
    summary.write_text("")
    promoted = run_cli(
        "promote", registry.ref(repo.name, digests[0]), "--move", "stable", environ=environ
    )
    assert promoted.code == 0, promoted
    text = summary.read_text()
    assert text.startswith("## gpuship promote\n")
    assert "# Rollback instructions for release" in text
    assert f"crane tag {repo}@{digests[1]} stable" in text  # back to what this replaced
    assert "failed=false" in outputs.read_text()
