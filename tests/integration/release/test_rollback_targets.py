"""Retention keeps what a recorded rollback returns to: issue #32's scenario, against the real
docker-registry, through the CLI as a user runs it."""

from __future__ import annotations

import io

import pytest
from release_images import RunCli, dated_image, tag_digest

from bed.oci import push
from bed.registry import Registry
from gpuship.cli.main import main
from gpuship.registry.client import RegistryClient
from gpuship.registry.reference import Repository

pytestmark = pytest.mark.integration

# The policy: keep only the newest candidate.
NEWEST_ONE = 'release: {retention: {keep: [{pattern: "sha-.*", newest: 1}]}}\n'


def _candidates(registry: Registry, name: str) -> list[str]:
    """sha-aaaaaaa-c, sha-bbbbbbb-c, sha-ccccccc-c, oldest first, as build-matrix pushes them."""
    return [
        push(
            registry.url,
            name,
            dated_image(f"{name}-{letter}", f"2026-01-0{day}T00:00:00Z"),
            tag=f"sha-{letter * 7}-c",
        )
        for day, letter in ((1, "a"), (2, "b"), (3, "c"))
    ]


def _promote(run_cli: RunCli, repo: Repository, digest: str, moves: tuple[str, ...]) -> str:
    args = [arg for tag in moves for arg in ("--move", tag)]
    promoted = run_cli("promote", f"{repo}@{digest}", *args)
    assert promoted.code == 0, promoted
    return str(promoted.report["result"]["record"]["id"])


# staging: the commands. prod latest: release.yml with `version` left empty and
# environment prod (its promote step passes no --tag and `--move prod --move latest`).
@pytest.mark.parametrize("moves", [("staging",), ("prod", "latest")], ids=["staging", "prod"])
def test_prune_keeps_the_digest_a_floating_tag_rolls_back_to(
    registry: Registry, run_cli: RunCli, moves: tuple[str, ...]
):
    name = f"targets/scenario-{moves[0]}"
    repo = Repository(registry.host, name)
    client = RegistryClient(environ={})
    a, b, c = _candidates(registry, name)
    _promote(run_cli, repo, a, moves)
    second = _promote(run_cli, repo, b, moves)

    pruned = run_cli("prune", str(repo), "--apply", config=NEWEST_ONE)

    assert pruned.code == 0, pruned
    result = pruned.report["result"]
    # Nothing is selected: A is the rollback target, B is where the tags are, C is newest.
    assert result["selected"] == [] and result["deleted"] == []
    assert result["rollback_targets"][a] == (
        f"rollback target of {moves[0]}, release {second} ({moves[0]} was here before it)"
    )
    assert client.head_manifest(repo.at(a)) is not None
    text = io.StringIO()
    main(["prune", str(repo)], environ={}, stdout=text)  # run_cli left gpuship.yaml here
    assert f"rollback target of {moves[0]}, release {second}" in text.getvalue()

    rolled = run_cli("rollback", f"{repo}:{moves[0]}", config=NEWEST_ONE)

    assert rolled.code == 0, rolled
    assert tag_digest(client, repo, moves[0]) == a
    assert tag_digest(client, repo, "sha-ccccccc-c") == c


def test_only_the_newest_releases_of_each_tag_keep_their_targets(
    registry: Registry, run_cli: RunCli
):
    """keep-releases: 1 keeps where staging's newest release moved it from; the digest the
    release before moved it from goes, and so does a digest `rollback --to` it could reach."""
    name = "targets/window"
    repo = Repository(registry.host, name)
    client = RegistryClient(environ={})
    a, b, c = _candidates(registry, name)
    for digest in (a, b, c):
        _promote(run_cli, repo, digest, ("staging",))
    config = NEWEST_ONE.replace("newest: 1}]", "newest: 0}], keep-releases: 1")

    pruned = run_cli("prune", str(repo), "--apply", config=config)

    assert pruned.code == 0, pruned
    assert pruned.report["result"]["deleted"] == [a]
    assert set(pruned.report["result"]["rollback_targets"]) == {b, c}
    assert client.head_manifest(repo.at(b)) is not None
