"""The whole release path against the registries a platform team has, credential-leak ledger on.

Bases come from the read-only public registry; `gpuship build` (the engine builder, with the
push registry's own credential) pushes candidates to the token-auth registry, whose token
service is on another port; `promote` works in that repository and `--to` the basic-auth and the
HTTPS registry (source credential to the source, target credential to the target); `rollback`,
`history`, `prune` and `verify` run against all three. Every credential is given the way a user
gives it (GPUSHIP_REGISTRY_AUTH, the CA in certs.d), and no credential may reach a host it does
not belong to.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from sample_bed import PLACEHOLDER_REGISTRY, SAMPLE, SampleProject, push_base

from bed import hosts
from bed.docker_engine import DockerEngine
from bed.topology import RegistryTopology, TopologyRegistry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient

pytestmark = pytest.mark.integration

COMMIT = "0123456789abcdef" * 2 + "01234567"
RETENTION = """
release:
  retention:
    protect-immutable: true
    keep:
      - pattern: "sha-.*|rc-.*|cu.*"
        newest: 0
verify:
  require-gpu-runtime: false
"""


@pytest.fixture
def project(
    tmp_path: Path, registry_topology: RegistryTopology, docker_engine: DockerEngine
) -> SampleProject:
    """The sample project pushing to the token-auth registry, its bases on the public one."""
    topology = registry_topology
    directory = tmp_path / "project"
    shutil.copytree(SAMPLE, directory)
    config = directory / "gpuship.yaml"
    text = config.read_text()
    text = text.replace(f"{PLACEHOLDER_REGISTRY}/sample/app", f"{topology.push.host}/flow/app")
    text = text.replace(f"{PLACEHOLDER_REGISTRY}/sample/", f"{topology.public.host}/flow/")
    config.write_text(text + RETENTION)
    for cuda in ("12.4", "12.6"):
        push_base(topology.public.upstream, f"x/flow/cuda-base:{cuda}-runtime", cuda)
    env = {
        **docker_engine.cli_env(),
        **topology.environ(),
        "GITHUB_SHA": COMMIT,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/app",
    }
    env.pop("GITHUB_ACTIONS", None)
    return SampleProject(directory, topology.public.upstream, env)


def released(project: SampleProject, *args: str) -> dict[str, Any]:
    result = project.gpuship("--format", "json", *args)
    assert result.code == 0, result.stderr + result.stdout
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def verify(
    project: SampleProject, image: str, nvml_host: Callable[[Mapping[str, Any]], dict[str, str]]
) -> dict[str, Any]:
    environ = {
        **nvml_host(hosts.A100_550),
        **{k: v for k, v in project.env.items() if k.startswith(("GPUSHIP_", "DOCKER_CONFIG"))},
        "DOCKER_HOST": "unix:///nonexistent/docker.sock",
    }
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "--format", "json", "verify", image],
        env=environ,
        cwd=project.directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    result: dict[str, Any] = json.loads(done.stdout)["result"]
    return result


def test_build_promote_rollback_history_prune_verify_across_registries(
    project: SampleProject,
    registry_topology: RegistryTopology,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
) -> None:
    topology = registry_topology
    assert project.gpuship("lock").code == 0
    cells = {f"{c['cuda']}-{c['python']}": c for c in project.matrix()}
    candidates = []
    for key in ("12.4-3.11", "12.6-3.11", "12.6-3.12"):
        build = project.gpuship(
            "build", "--cell", json.dumps(cells[key]), "--builder", "engine",
            "--network", "none", "--no-image-checks",
        )  # fmt: skip
        assert build.code == 0, build.stderr + build.stdout
        candidates.append(build.outputs["image"])
    first, second, unreleased = candidates
    source = first.split("@", 1)[0]
    targets: list[TopologyRegistry] = [topology.push, topology.basic, topology.tls]
    repositories = [source, *(f"{t.host}/flow/app" for t in targets[1:])]
    for repository in repositories:
        to = [] if repository == source else ["--to", repository]
        for image, version in ((first, "1.0.0"), (second, "1.1.0")):
            released(project, "promote", image, "--tag", version, "--move", "stable", *to)
        released(project, "promote", unreleased, "--tag", "rc-1", *to)
    for repository in repositories:
        rolled = released(project, "rollback", f"{repository}:stable")
        assert rolled["result"]["record"]["digest"] == first.split("@", 1)[1]
        history = released(project, "history", repository)["result"]
        kinds = [record["kind"] for record in history["records"]]
        assert kinds.count("rollback") == 1 and kinds.count("promote") == 3
        pruned = released(project, "prune", repository, "--apply")
        deleted = pruned["result"]["deleted"]
        assert deleted == [unreleased.split("@", 1)[1]], pruned
        checked = verify(project, f"{repository}@{first.split('@', 1)[1]}", nvml_host)
        assert checked["verdict"] == "ok", checked
    with RegistryClient(environ=topology.environ()) as client:
        for target in targets:
            name = "flow/app"
            repo = Repository(target.host, name)
            assert client.resolve_digest(repo.tag("stable")) == first.split("@", 1)[1]
            assert client.resolve_digest(repo.tag("1.1.0")) == second.split("@", 1)[1]
    # Who got what: each registry its own credential or tokens, the public one nothing.
    ledger = topology.ledger
    assert ledger.presented(topology.public.host) == set()
    assert "the push registry's credential" in ledger.presented(topology.push.issuer.host)
    assert f"token for {topology.push.host}" in ledger.presented(topology.push.host)
    assert "the basic-auth registry's credential" in ledger.presented(topology.basic.host)
    assert "the TLS registry's credential" in ledger.presented(topology.tls.host)
    assert topology.violations() == []
