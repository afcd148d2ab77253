"""A candidate deleted from the repository (by retention) before or while promote runs is an
input that no longer exists, against the real docker-registry: exit 2, every tag as it was,
one line naming what is gone, and JSON `failed: true`.

The fault proxy's hook deletes a child manifest of the candidate index right before the
registry receives the version tag's PUT (as a prune's DELETE landing between promote's reads
and its write did, 1 round in 400 of `test_prune_races.py`): registry:2 refuses the PUT with
400 MANIFEST_BLOB_UNKNOWN. Before, promote exited 1 ("writing tag ... failed").
"""

from __future__ import annotations

import pytest
from release_images import RunCli, candidate_image, candidate_index, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"
# One read of a tag after its write: the refused PUT is not waited on for 10 s.
CONFIG = "release:\n  consistency-window: 0\n"


def _candidate(registry: Registry, name: str) -> tuple[Repository, str, str, str]:
    """`prod` at an image; the candidate index (one image, one attestation) tagged `sha-c1`.
    Returns the repository, prod's digest, the candidate's and its image child's."""
    prod = push(registry.url, name, candidate_image(f"{name}-prod"), tag="prod")
    index = candidate_index(name, 200, ("amd64",))
    c1 = push(registry.url, name, index, tag="sha-c1")
    return Repository(registry.host, name), prod, c1, index.images[0].digest


def _delete_before_put(client: RegistryClient, repo: Repository, child: str, tag: str):
    """A proxy hook deleting manifest `child` right before `tag`'s first PUT reaches the
    registry; returns the hook and the list of requests it saw after that PUT."""
    after: list[str] = []

    def hook(index: int, method: str, path: str) -> str | None:
        if after or (method == "PUT" and path.endswith(f"/manifests/{tag}")):
            if not after:
                client.delete_manifest(repo.at(child))
            after.append(f"{method} {path}")
        return None

    return hook, after


def test_a_child_manifest_deleted_while_promote_runs_is_an_input_error(
    registry: Registry, run_cli: RunCli
):
    repo, prod, c1, child = _candidate(registry, "gone/child")
    client = RegistryClient(environ={})
    hook, _ = _delete_before_put(client, repo, child, "2.0.1")
    with faults.start(registry.host, hook=hook) as proxy:
        source = f"{proxy.host}/{repo.name}@{c1}"
        run = run_cli("promote", source, "--tag", "2.0.1", "--move", "prod", config=CONFIG)
    assert run.code == 2, run  # before: 1
    assert run.report["failed"] is True, run.report
    errors = [f["message"] for f in run.report["findings"] if f["severity"] == "error"]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith(
        f"{source}: its child manifest {child} was deleted from {proxy.host}/{repo.name} "
        "while the release ran (e.g. by retention); writing tag 2.0.1 failed: "
    ), errors
    assert "MANIFEST_BLOB_UNKNOWN" in errors[0] or "manifest blob unknown" in errors[0], errors
    # Every tag as it was; nothing recorded, nothing left unfinished.
    assert tag_digest(client, repo, "prod") == prod
    assert tag_digest(client, repo, "2.0.1") is None
    history = load_history(client, repo, HISTORY_TAG)
    assert history.records == [] and history.unfinished == [], history


def test_a_refused_write_whose_candidate_is_whole_fails_as_before(
    registry: Registry, run_cli: RunCli
):
    """The same refusal, but the child is back by the time promote reads the candidate again
    (pushed again on the first request after the PUT): not an input error, exit 1."""
    repo, prod, c1, child = _candidate(registry, "gone/back")
    client = RegistryClient(environ={})
    saved = client.get_manifest(repo.at(child))
    delete, after = _delete_before_put(client, repo, child, "2.0.1")

    def hook(index: int, method: str, path: str) -> str | None:
        seen = len(after)
        delete(index, method, path)
        if seen == 1:  # the first request after the refused PUT
            client.put_manifest(repo.at(child), saved.data, saved.media_type)
        return None

    with faults.start(registry.host, hook=hook) as proxy:
        source = f"{proxy.host}/{repo.name}@{c1}"
        run = run_cli("promote", source, "--tag", "2.0.1", "--move", "prod", config=CONFIG)
    assert len(after) > 1, after
    assert run.code == 1, run
    assert run.report["failed"] is True, run.report
    errors = [f["message"] for f in run.report["findings"] if f["severity"] == "error"]
    assert len(errors) == 1 and errors[0].startswith("writing tag 2.0.1 failed: "), errors
    assert "deleted" not in errors[0], errors
    assert tag_digest(client, repo, "prod") == prod
    assert tag_digest(client, repo, "2.0.1") is None


def test_a_candidate_deleted_before_promote_starts_is_an_input_error(
    registry: Registry, run_cli: RunCli
):
    repo, prod, c1, _ = _candidate(registry, "gone/before")
    client = RegistryClient(environ={})
    client.delete_manifest(repo.at(c1))
    run = run_cli("promote", f"{repo}@{c1}", "--tag", "2.0.1", "--move", "prod")
    assert run.code == 2 and run.report == {}, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"gpuship: error: {repo}@{c1} is not in {repo} (never pushed, or deleted before the "
        "release started, e.g. by retention): "
    ), lines
    assert tag_digest(client, repo, "prod") == prod
    assert tag_digest(client, repo, "2.0.1") is None


def test_a_child_manifest_deleted_while_promote_copies_it_is_an_input_error(
    registry: Registry, run_cli: RunCli
):
    """promote --to: the child is deleted from the source right before the copy reads it."""
    repo, _, c1, child = _candidate(registry, "gone/copied")
    client = RegistryClient(environ={})
    deleted: list[str] = []

    def hook(index: int, method: str, path: str) -> str | None:
        if not deleted and method == "GET" and path.endswith(f"{repo.name}/manifests/{child}"):
            client.delete_manifest(repo.at(child))
            deleted.append(path)
        return None

    with faults.start(registry.host, hook=hook) as proxy:
        source = f"{proxy.host}/{repo.name}@{c1}"
        target = f"{proxy.host}/gone/copied-prod"
        run = run_cli("promote", source, "--tag", "2.0.1", "--to", target, config=CONFIG)
    assert deleted, "the copy never read the child"
    assert run.code == 2, run  # before: 1
    assert run.report["failed"] is True, run.report
    errors = [f["message"] for f in run.report["findings"] if f["severity"] == "error"]
    assert len(errors) == 1 and errors[0].startswith(
        f"{source}: its child manifest {child} was deleted from {proxy.host}/{repo.name} "
        f"while the release ran (e.g. by retention); copying content to {target} failed: "
    ), errors
    assert tag_digest(client, Repository(registry.host, "gone/copied-prod"), "2.0.1") is None
