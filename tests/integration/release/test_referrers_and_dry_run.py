"""`promote --to` keeps signatures and attestations with the image; `--dry-run` changes nothing.

Against the bed's topology (token-auth source, basic-auth and HTTPS targets) with the leak
ledger on: a cosign-style signature and an in-toto attestation, really signed, are attached to
the candidate as OCI 1.1 artifacts with `subject` and as cosign tag-schema tags; after the
promotion they are in the target, point at the promoted digest and still verify.
"""

from __future__ import annotations

import io
import json

import pytest
from release_images import RunCli

from bed.oci import make_image
from bed.signing import SIMPLE_SIGNING, Signer, attach
from bed.topology import RegistryTopology, TopologyRegistry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound
from gpuship.registry.manifest import ImageManifest, parse_manifest
from gpuship.release.history import RECORD_TYPE

pytestmark = pytest.mark.integration


def candidate(client: RegistryClient, repo: Repository, marker: str) -> tuple[str, str, int]:
    """Push a small image by digest; returns (digest, media type, size)."""
    image = make_image([{"opt/app/marker": marker.encode()}])
    for blob in (*image.layers, image.config):
        client.upload_blob(repo, blob.digest, io.BytesIO(blob.data), len(blob.data))
    client.put_manifest(repo.at(image.digest), image.manifest.data, image.manifest.media_type)
    return image.digest, image.manifest.media_type, len(image.manifest.data)


def layer_of(client: RegistryClient, repo: Repository, digest: str) -> tuple[bytes, dict[str, str]]:
    """The one layer of an artifact manifest: its bytes and annotations."""
    manifest = parse_manifest(*client.get_manifest(repo.at(digest))[:2])
    assert isinstance(manifest, ImageManifest)
    (layer,) = manifest.layers
    with client.open_blob(repo, layer.digest) as reader:
        return reader.read(), layer.annotations


def tag_state(client: RegistryClient, repo: Repository) -> dict[str, str]:
    """Every tag of `repo` and its digest ({} for a repository that does not exist)."""
    try:
        tags = client.list_tags(repo)
    except NotFound:
        return {}
    return {tag: client.resolve_digest(repo.tag(tag)) for tag in tags}


def assert_signed_in(client: RegistryClient, repo: Repository, digest: str, signer: Signer) -> None:
    """Both attachments exist in `repo` both ways, point at `digest` and verify."""
    referrers = [d for d in client.referrers(repo.at(digest)) if d.artifact_type != RECORD_TYPE]
    assert sorted(d.artifact_type or "" for d in referrers) == sorted(
        [SIMPLE_SIGNING, "application/vnd.in-toto+json"]
    )
    for descriptor in referrers:
        manifest = parse_manifest(*client.get_manifest(repo.at(descriptor.digest))[:2])
        assert manifest.subject is not None and manifest.subject.digest == digest
        data, annotations = layer_of(client, repo, descriptor.digest)
        if descriptor.artifact_type == SIMPLE_SIGNING:
            assert signer.verified_signature_digest(data, annotations) == digest
        else:
            assert signer.verified_attestation_digest(data) == digest
    digest_tag = digest.replace(":", "-")
    signature = client.resolve_digest(repo.tag(f"{digest_tag}.sig"))
    assert signer.verified_signature_digest(*layer_of(client, repo, signature)) == digest
    attestation = client.resolve_digest(repo.tag(f"{digest_tag}.att"))
    envelope, annotations = layer_of(client, repo, attestation)
    assert json.loads(envelope)["payloadType"] == "application/vnd.in-toto+json"
    assert annotations["predicateType"] == "https://slsa.dev/provenance/v1"
    assert signer.verified_attestation_digest(envelope) == digest


@pytest.mark.parametrize("target_name", ["basic", "tls"])
def test_promote_to_carries_signatures_and_attestations_that_still_verify(
    registry_topology: RegistryTopology, run_cli: RunCli, target_name: str
):
    topology = registry_topology
    environ = topology.environ()
    target: TopologyRegistry = getattr(topology, target_name)
    source = Repository(topology.push.host, f"sig/{target_name}")
    signer = Signer.new()
    with RegistryClient(environ=environ) as client:
        digest, media_type, size = candidate(client, source, f"signed for {target_name}")
        attached = attach(client, source, digest, media_type, size, signer)
        assert_signed_in(client, source, digest, signer)
        destination = f"{target.host}/sig/app"
        promoted = run_cli(
            "promote", f"{source}@{digest}", "--tag", "1.0.0", "--move", "stable",
            "--to", destination, environ=environ,
        )  # fmt: skip
        assert promoted.code == 0, promoted
        copied = promoted.report["result"]["referrers"]
        assert sorted(r["digest"] for r in copied) == sorted(
            [
                attached.signature_artifact,
                attached.attestation_artifact,
                attached.signature_tag,
                attached.attestation_tag,
            ]
        )
        assert {r["action"] for r in copied} == {"copy"}
        repo = Repository(target.host, "sig/app")
        assert client.resolve_digest(repo.tag("stable")) == digest
        assert_signed_in(client, repo, digest, signer)
        again = run_cli(
            "promote", f"{source}@{digest}", "--tag", "1.0.0", "--move", "stable",
            "--to", destination, environ=environ,
        )  # fmt: skip
        assert again.code == 0, again
        assert {r["action"] for r in again.report["result"]["referrers"]} == {"exists"}
    assert topology.violations() == []


def test_a_target_signature_tag_on_other_content_is_kept_and_reported(
    registry_topology: RegistryTopology, run_cli: RunCli
):
    topology = registry_topology
    environ = topology.environ()
    source = Repository(topology.push.host, "sig/kept")
    target = Repository(topology.basic.host, "sig/kept")
    with RegistryClient(environ=environ) as client:
        digest, media_type, size = candidate(client, source, "kept")
        attach(client, source, digest, media_type, size, Signer.new())
        # The target was signed separately, by its own key, before this promotion.
        content = candidate(client, target, "kept")
        assert content[0] == digest
        theirs = Signer.new()
        attach(client, target, digest, media_type, size, theirs)
        their_tag = client.resolve_digest(target.tag(digest.replace(":", "-") + ".sig"))
        result = run_cli(
            "promote", f"{source}@{digest}", "--tag", "2.0.0", "--to", str(target), environ=environ
        )
        assert result.code == 0, result
        assert [f["rule"] for f in result.report["findings"]] == ["GSR105", "GSR105"]
        assert client.resolve_digest(target.tag(digest.replace(":", "-") + ".sig")) == their_tag
        assert theirs.verified_signature_digest(*layer_of(client, target, their_tag)) == digest
    assert topology.violations() == []


def _methods_since(registry: TopologyRegistry, start: int) -> set[str]:
    return {method for method, _ in registry.proxy.requests[start:]}


def test_promote_and_rollback_dry_runs_change_nothing(
    registry_topology: RegistryTopology, run_cli: RunCli
):
    topology = registry_topology
    environ = topology.environ()
    source = Repository(topology.push.host, "dry/src")
    target = Repository(topology.basic.host, "dry/app")
    with RegistryClient(environ=environ) as client:
        first, media_type, size = candidate(client, source, "first")
        attach(client, source, first, media_type, size, Signer.new())
        second = candidate(client, source, "second")[0]
        before = (tag_state(client, source), tag_state(client, target))
        marks = (len(topology.push.proxy.requests), len(topology.basic.proxy.requests))
        dry = run_cli(
            "promote", f"{source}@{first}", "--tag", "1.0.0", "--move", "stable",
            "--to", str(target), "--dry-run", environ=environ,
        )  # fmt: skip
        assert dry.code == 0, dry
        plan = dry.report["result"]
        assert plan["dry_run"] is True
        assert {(t["tag"], t["before"], t["after"], t["action"]) for t in plan["tags"]} == {
            ("stable", None, first, "create"),
            ("1.0.0", None, first, "create"),
        }
        assert {c["action"] for c in plan["content"] if c["kind"] == "blob"} == {"copy"}
        assert [c["action"] for c in plan["content"] if c["kind"] == "manifest"] == ["put"]
        assert len(plan["referrers"]) == 4
        assert "nothing changed" in dry.report["headline"]
        assert (tag_state(client, source), tag_state(client, target)) == before
        assert _methods_since(topology.push, marks[0]) <= {"GET", "HEAD"}
        assert _methods_since(topology.basic, marks[1]) <= {"GET", "HEAD"}
        # Now for real, twice, so stable has somewhere to roll back to.
        for digest, version in ((first, "1.0.0"), (second, "1.1.0")):
            done = run_cli(
                "promote", f"{source}@{digest}", "--tag", version, "--move", "stable",
                "--to", str(target), environ=environ,
            )  # fmt: skip
            assert done.code == 0, done
        before = tag_state(client, target)
        mark = len(topology.basic.proxy.requests)
        rollback = run_cli("rollback", f"{target}:stable", "--dry-run", environ=environ)
        assert rollback.code == 0, rollback
        (step,) = rollback.report["result"]["tags"]
        assert (step["tag"], step["before"], step["after"], step["action"]) == (
            "stable",
            second,
            first,
            "move",
        )
        assert tag_state(client, target) == before
        assert _methods_since(topology.basic, mark) <= {"GET", "HEAD"}
        # A dry run that would be refused fails like the real run, and changes nothing too.
        refused = run_cli(
            "promote", f"{source}@{second}", "--tag", "1.0.0", "--to", str(target),
            "--dry-run", environ=environ,
        )  # fmt: skip
        assert refused.code == 1
        assert [f["rule"] for f in refused.report["findings"]] == ["GSR101"]
        assert tag_state(client, target) == before
    assert topology.violations() == []
