"""A fleet inventory in the bed registry: real `gpuship audit` readings of NVML stand-in hosts,
published as the runners' entries the way `gpuship audit --publish` stores them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuship.compat.audit import HostAudit, audit_from_document
from gpuship.reference import parse_repository
from gpuship.registry.client import RegistryClient
from gpuship.route.inventory import entry_tag, publish_audit, read_entry

HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]


@dataclass(frozen=True)
class Runner:
    """One runner of the fleet: its name, labels, host description and CPU (uname -m)."""

    name: str
    labels: tuple[str, ...]
    host: Mapping[str, Any]
    machine: str = "x86_64"
    taken_at: str | None = None


def audit_of(runner: Runner, nvml_host: HostEnv, workdir: Path) -> HostAudit:
    """`gpuship audit` on the NVML stand-in describing the runner's host (no Docker)."""
    env = {**nvml_host(runner.host), "RUNNER_NAME": runner.name}
    env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    out = workdir / f"audit-{runner.name}.json"
    argv = [sys.executable, "-m", "gpuship", "audit", "--json-file", str(out)]
    for label in runner.labels:
        argv += ["--label", label]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    # The stand-in runs on this x86_64 machine; an arm64 runner's audit says aarch64.
    document["system"]["machine"] = runner.machine
    if runner.taken_at:
        document["taken_at"] = runner.taken_at
    return audit_from_document(document, str(out))


def publish_fleet(
    registry_url_host: str,
    repository: str,
    runners: Sequence[Runner],
    nvml_host: HostEnv,
    workdir: Path,
) -> dict[str, str]:
    """Publish every runner's audit to `registry_url_host/repository`; runner -> entry tag."""
    repo = parse_repository(f"{registry_url_host}/{repository}")
    tags = {}
    with RegistryClient() as client:
        for runner in runners:
            audit = audit_of(runner, nvml_host, workdir)
            tag = entry_tag(audit.runner)
            publish_audit(client, repo, audit, read_entry(client, repo, tag))
            tags[runner.name] = tag
    return tags
