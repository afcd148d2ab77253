"""Retention keeps what a recorded rollback returns to, rollback refuses a target that is gone
before moving anything, and history marks such targets: issue #32's scenario, against the real
docker-registry, through the CLI as a user runs it."""

from __future__ import annotations

import io

import pytest
from release_images import RunCli, dated_image, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.cli.main import main
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import load_history

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
    history = run_cli("history", f"{repo}:{moves[0]}", config=NEWEST_ONE)
    assert history.code == 0 and history.report["result"]["gone"] == [], history


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


def test_rollback_to_a_target_that_is_gone_is_refused_before_anything_moves(
    registry: Registry, run_cli: RunCli
):
    """keep-releases: 0 keeps no rollback target: prune deletes A. The rollback then stops with
    exit 2 and one line naming the release, the tag and the digest, and moves nothing; history
    marks A GONE (JSON, text, markdown)."""
    name = "targets/gone"
    repo = Repository(registry.host, name)
    client = RegistryClient(environ={})
    a, b, _ = _candidates(registry, name)
    _promote(run_cli, repo, a, ("staging",))
    second = _promote(run_cli, repo, b, ("staging",))
    config = NEWEST_ONE.replace("}]}}", "}], keep-releases: 0}}")
    assert run_cli("prune", str(repo), "--apply", config=config).report["result"]["deleted"] == [a]
    records = len(load_history(client, repo, "gpuship.releases").records)

    for dry in ((), ("--dry-run",)):
        refused = run_cli("rollback", f"{repo}:staging", *dry, config=config)

        assert refused.code == 2, refused
        assert refused.report == {}  # no JSON document that could say anything else
        (line,) = refused.stderr.strip().splitlines()
        assert f"release {second}" in line and a in line and f"{repo}:staging" in line, line
        assert "who removed it is unknown" in line and "nothing was moved" in line, line
        assert tag_digest(client, repo, "staging") == b
        assert len(load_history(client, repo, "gpuship.releases").records) == records
        assert not [t for t in client.list_tags(repo) if t.endswith(".intent")]

    history = run_cli("history", f"{repo}:staging", config=config)

    assert history.code == 0, history
    assert history.report["result"]["gone"] == [a]
    assert "1 digests they name are GONE" in history.report["headline"]
    for fmt in ("text", "markdown"):
        out = io.StringIO()
        main(["--format", fmt, "history", f"{repo}:staging"], environ={}, stdout=out)
        assert f"{a[:19]} (GONE) -> {b[:19]} (move)" in out.getvalue(), out.getvalue()


def test_history_reads_each_digest_of_the_releases_it_shows_once(
    registry: Registry, run_cli: RunCli
):
    """The GONE check costs one HEAD per distinct digest the shown releases name (--limit
    bounds them), none for releases not shown."""
    name = "targets/history-bound"
    a, b, c = _candidates(registry, name)
    repo = Repository(registry.host, name)
    for digest in (a, b, c):
        _promote(run_cli, repo, digest, ("staging", "edge"))
    with faults.start(registry.host) as proxy:
        shown = run_cli("history", f"{proxy.host}/{name}", "--limit", "1")
    assert shown.code == 0 and shown.report["result"]["gone"] == [], shown
    heads = [
        r.path.rsplit("/", 1)[1]
        for r in proxy.log
        if r.method == "HEAD" and "/manifests/sha256:" in r.path
    ]
    # The newest release moved staging and edge from b to c: two digests, one HEAD each.
    assert sorted(heads) == sorted([b, c])
