"""The fault sweep: one gpuship command against a fresh repository behind its own fault proxy
(`bed.faults`), judged against what the registry holds afterwards.

Runs in worker processes (the CLI's in-process `main` writes to one stdout at a time), so
everything here is importable and takes plain values. A verdict lists the problems found:
a tag at a digest that is neither its old nor its new one (corrupted), a report that says
something the registry contradicts, or an exit code the contract does not give:

- one transient fault (any kind but `gone`): retried, so the command completes: exit 0;
- `gone` (the registry stops answering from that request on): exit 3, with a report when the
  run had begun writing, an error line naming the request when it had not; exit 0 when a
  release was already recorded (only its re-check and the removal of its intent were left).
"""

from __future__ import annotations

import functools
import io
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from release_images import candidate_image, candidate_index, dated_image, place_seeded, tag_digest

from bed import faults
from bed.oci import Image, Index
from gpuship.cli.main import main
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release

SCENARIOS = ("promote", "promote-to", "rollback", "prune")
# Every fault that breaks a request; `delay` only slows one (the concurrency tests use it). A
# registry that echoes a credential or forges a header is hostile, not flaky: refused with exit
# 3 by design, in tests/integration/registry/test_echoed_credentials.py and test_forged_headers.py.
HOSTILE = ("echo", "forge-location", "forge-link", "forge-challenge")
SWEPT = tuple(fault for fault in faults.FAULTS if fault != "delay" and fault not in HOSTILE)
TRANSIENT = tuple(fault for fault in SWEPT if fault != "gone")
# Short timeouts so stalls cost a second; a few tries, little backoff (429 waits its
# Retry-After of 1 s all the same).
ENVIRON = {
    "GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "1",
    "GPUSHIP_REGISTRIES__ATTEMPTS": "4",
    "GPUSHIP_REGISTRIES__BACKOFF": "0.01",
    "GPUSHIP_DEADLINE": "60",
}
STALL_S = 5.0

PRUNE_CONFIG = """
release:
  retention:
    keep:
      - pattern: "nightly-.*"
        newest: 1
"""
_REQUEST_RE = re.compile(r"\b(GET|HEAD|PUT|POST|PATCH|DELETE) ")


@dataclass(frozen=True)
class Case:
    """One run: a scenario, and the fault planned at one request position (None: no fault)."""

    scenario: str
    number: int
    position: int | None = None
    fault: str | None = None


@dataclass
class Verdict:
    """What one run did and what was wrong with it."""

    case: Case
    code: int
    requests: int
    effective: bool
    seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass
class _Setup:
    argv: list[str]
    repo: Repository
    before: dict[str, str | None]
    after: str | None = None
    deletable: set[str] = field(default_factory=set)
    kept: dict[str, str] = field(default_factory=dict)


def run_case(registry_host: str, registry_url: str, workdir: str, case: Case) -> Verdict:
    """Prepare the scenario directly on the registry, run it through a proxy, judge it."""
    direct = RegistryClient(environ={})
    setup = _prepare(case, registry_host, registry_url, Path(workdir), direct)
    before_records = _record_ids(direct, setup.repo)
    plan = {case.position: case.fault} if case.fault is not None else {}
    started = time.monotonic()
    with faults.start(registry_host, plan, stall_s=STALL_S) as proxy:
        argv = [part.replace("{proxy}", proxy.host) for part in setup.argv]
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main(["--format", "json", *argv], environ=ENVIRON, stdout=stdout, stderr=stderr)
    seconds = time.monotonic() - started
    text = stdout.getvalue()
    report = json.loads(text) if text.strip().startswith("{") else None
    effective = any(request.applied for request in proxy.log)
    verdict = Verdict(case, code, proxy.count(), effective, seconds)
    verdict.problems += _judge_exit(case, code, report, stderr.getvalue())
    if case.scenario == "prune":
        verdict.problems += _judge_prune(direct, setup, report)
    else:
        verdict.problems += _judge_release(direct, setup, code, report, before_records)
    direct.close()
    return verdict


def _judge_exit(case: Case, code: int, report: dict[str, Any] | None, stderr: str) -> list[str]:
    problems = []
    if "Traceback" in stderr or code == 4:
        problems.append(f"traceback / exit 4: {stderr.strip()[-300:]}")
    expected = 3 if case.fault == "gone" else 0
    if case.fault == "gone" and code == 0 and _recorded(report):
        expected = 0  # gone only after the release was recorded: its clean-up is best effort
    if code != expected:
        problems.append(f"exit {code}, expected {expected}: {stderr.strip()[-300:]}")
    if code == 3 and report is None and not _REQUEST_RE.search(stderr):
        problems.append(f"exit 3 without naming the request: {stderr.strip()}")
    return problems


def _recorded(report: dict[str, Any] | None) -> bool:
    """A release whose record is stored and that reports no error."""
    if report is None or report["command"] not in ("promote", "rollback"):
        return False
    return report["result"]["record_state"] == "stored" and report["result"]["error"] is None


def _judge_release(
    client: RegistryClient,
    setup: _Setup,
    code: int,
    report: dict[str, Any] | None,
    before_records: set[str],
) -> list[str]:
    problems = []
    now = {tag: tag_digest(client, setup.repo, tag) for tag in setup.before}
    for tag, digest in now.items():
        if digest not in (setup.before[tag], setup.after):
            problems.append(f"CORRUPTED: {tag} at {digest}")
    new_records = _record_ids(client, setup.repo) - before_records
    if report is None:
        if now != setup.before:
            problems.append(f"no report, yet tags changed: {now}")
        if new_records:
            problems.append(f"no report, yet records appeared: {new_records}")
        return problems
    result = report["result"]
    record_id = result["record"]["id"]
    if code == 0:
        if any(digest != setup.after for digest in now.values()):
            problems.append(f"exit 0 but tags are {now}")
        if result["record_state"] != "stored" or new_records != {record_id}:
            problems.append(f"exit 0: record {result['record_state']}, new: {new_records}")
        return problems
    for entry in result["tags"]:
        problems += _judge_tag(entry, now[entry["tag"]], setup)
    state = result["record_state"]
    if state == "stored" and new_records != {record_id}:
        problems.append(f"report says record stored, history has {new_records}")
    if state in ("not stored", "removed", "none") and new_records:
        problems.append(f"report says record {state}, history has {new_records}")
    return problems


def _judge_tag(entry: dict[str, Any], actual: str | None, setup: _Setup) -> list[str]:
    tag, fate = entry["tag"], entry["result"]
    problems = []
    if entry["known"] and entry["now"] != actual:
        problems.append(f"report: {tag} now at {entry['now']}, registry: {actual}")
    must = {
        "restored": setup.before[tag],
        "not written": setup.before[tag],
        "NOT restored": setup.after,
        "written": setup.after,
        "unchanged": setup.after,
    }
    if fate in must and actual != must[fate]:
        problems.append(f"report: {tag} {fate}, registry: {actual}")
    return problems


def _judge_prune(client: RegistryClient, setup: _Setup, report: dict[str, Any] | None) -> list[str]:
    problems = []
    for tag, digest in setup.kept.items():
        found = tag_digest(client, setup.repo, tag)
        if found != digest:
            problems.append(f"CORRUPTED: kept tag {tag} at {found}, was {digest}")
    present = {d for d in setup.deletable if client.head_manifest(setup.repo.at(d)) is not None}
    if report is None:
        if present != setup.deletable:
            problems.append(f"no report, yet {setup.deletable - present} were deleted")
        return problems
    result = report["result"]
    deleted, unknown = set(result["deleted"]), set(result["unknown"])
    for digest in setup.deletable:
        gone = digest not in present
        if digest in deleted and not gone:
            problems.append(f"report: {digest} deleted, registry still has it")
        if digest not in deleted | unknown and gone:
            problems.append(f"report: {digest} not deleted, registry lost it")
    return problems


def _prepare(case: Case, host: str, url: str, workdir: Path, client: RegistryClient) -> _Setup:
    name = f"sweep/{case.scenario}-{case.number}"
    repo = Repository(host, name)
    proxied = f"{{proxy}}/{name}"

    def place(kind: str, tag: str | None = None, into: Repository = repo) -> str:
        return place_seeded(client, url, into, _seed(kind), tag)

    if case.scenario == "promote":
        old, new = place("old", "stable"), place("new")
        argv = ["promote", f"{proxied}@{new}", "--tag", "2.0.0"]
        argv += ["--move", "stable", "--move", "canary"]
        return _Setup(argv, repo, {"stable": old, "canary": None, "2.0.0": None}, new)
    if case.scenario == "promote-to":
        target = Repository(host, f"{name}-pub")
        new, old = place("index"), place("old", "stable", target)
        argv = ["promote", f"{proxied}@{new}", "--to", f"{{proxy}}/{target.name}"]
        argv += ["--tag", "2.0.0", "--move", "stable"]
        return _Setup(argv, target, {"stable": old, "2.0.0": None}, new)
    if case.scenario == "rollback":
        old, new = place("old", "stable"), place("new")
        _release(client, repo, new, "stable")
        return _Setup(["rollback", f"{proxied}:stable"], repo, {"stable": new}, old)
    digests = {n: place(f"nightly-{n}", f"nightly-{n}") for n in range(1, 5)}
    _release(client, repo, digests[1], "stable")
    config = workdir / f"{name.replace('/', '-')}.yaml"
    config.write_text(PRUNE_CONFIG)
    kept = {"stable": digests[1], "nightly-1": digests[1], "nightly-4": digests[4]}
    kept |= load_history(client, repo, "gpuship.releases").artifacts  # the record's own tag
    argv = ["--config", str(config), "prune", f"{proxied}", "--apply"]
    return _Setup(argv, repo, {}, None, {digests[2], digests[3]}, kept)


@functools.cache
def _seed(kind: str) -> Image | Index:
    """The images every run of this worker uses (each run has its own repository)."""
    if kind == "index":
        # One image and its attestation, as buildx pushes a single-platform build: the
        # children are copied before the index.
        return candidate_index("sweep", 300, ("amd64",))
    if kind.startswith("nightly-"):
        month = int(kind.removeprefix("nightly-"))
        return dated_image(f"sweep-{kind}", f"2026-0{month}-01T00:00:00Z")
    return candidate_image(f"sweep-{kind}", 300)


def _release(client: RegistryClient, repo: Repository, digest: str, tag: str) -> None:
    request = ReleaseRequest(repo.at(digest), repo, (TagRequest(tag, TagKind.FLOATING),))
    outcome = release(client, request, ReleaseConfig(), environ={}, now=datetime.now(timezone.utc))
    assert outcome.succeeded, outcome.error


def _record_ids(client: RegistryClient, repo: Repository) -> set[str]:
    return {record.id for record in load_history(client, repo, "gpuship.releases").records}
