"""Releases stopped part-way, for real: `gpuship` runs as its own process, the fault proxy
(`bed.faults`) holds one chosen request (or makes the registry go away there), and the test
sends the process SIGTERM or SIGINT while it waits on that request.

What must hold: the run puts back what it moved, or leaves its intent, which `history` lists
as unfinished and the same command run again completes; `rollback` works afterwards; the
process exits 128 + the signal (130, 143) or 3 (the registry gone), with its report.

Before the fix, SIGTERM killed the process with tags moved, no record and no output; SIGINT
exited 130 without putting tags back or naming them; a write that landed after the run gave
up left tags moved with no record, and running the promote again said "nothing to record".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from release_images import RunCli, dated_image, stable_and_candidate, tag_digest

from bed import faults
from bed.action_step import start_action_step
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import History, load_history

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"
ROOT = Path(__file__).resolve().parents[3]
# One try per request and a short timeout: a held request is given up on within a second.
ENVIRON = {
    "GPUSHIP_REGISTRIES__ATTEMPTS": "1",
    "GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "1",
}


@dataclass(frozen=True)
class Run:
    code: int
    report: dict[str, Any] | None
    stderr: str

    @property
    def tags(self) -> dict[str, dict[str, Any]]:
        assert self.report is not None, self.stderr
        return {entry["tag"]: entry for entry in self.report["result"]["tags"]}


def _hold_at(method: str, wanted: Callable[[str], bool], fault: str) -> tuple[faults.Hook, Any]:
    """A hook giving `fault` to the first `method` request whose path is `wanted`; the event
    is set when it arrives."""
    reached = threading.Event()

    def hook(index: int, seen: str, path: str) -> str | None:
        if seen == method and wanted(path) and not reached.is_set():
            reached.set()
            return fault
        return None

    return hook, reached


def _tag_put(tag: str) -> Callable[[str], bool]:
    return lambda path: path.endswith(f"/manifests/{tag}")


def _record_put(path: str) -> bool:
    return f"/manifests/{HISTORY_TAG}." in path and not path.endswith(".intent")


def _gpuship(args: list[str], cwd: Path, extra: dict[str, str] | None = None) -> subprocess.Popen:
    environ = {"PATH": os.environ["PATH"], "HOME": str(cwd), **ENVIRON, **(extra or {})}
    command = [sys.executable, "-m", "gpuship", "--format", "json", *args]
    return subprocess.Popen(
        command, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(
    process: subprocess.Popen,
    reached: Any = None,
    signum: int | None = None,
    landed: Callable[[], bool] = lambda: True,
) -> Run:
    """Signal the process once `reached` is set and the held request has `landed` in the
    registry (a stall forwards it first), then collect its exit code and report."""
    if signum is not None:
        assert reached.wait(timeout=30), "the run never reached the held request"
        deadline = time.monotonic() + 10
        while not landed():
            assert time.monotonic() < deadline, "the held request never reached the registry"
            time.sleep(0.02)
        process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    report = json.loads(stdout) if stdout.strip().startswith("{") else None
    return Run(process.returncode, report, stderr)


def _history(client: RegistryClient, repo: Repository) -> History:
    return load_history(client, repo, HISTORY_TAG)


def _promote(host: str, repo: Repository, digest: str, version: str) -> list[str]:
    source = f"{host}/{repo.name}@{digest}"
    return ["promote", source, "--tag", version, "--move", "stable", "--move", "canary"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_tag_write_puts_back_what_was_moved(
    registry: Registry, tmp_path: Path, signum: int
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, f"stop/tag-{signum}")
    client = RegistryClient(environ={})
    hook, reached = _hold_at("PUT", _tag_put("canary"), "stall")  # stable is written first
    with faults.start(registry.host, hook=hook, stall_s=5) as proxy:
        process = _gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path)
        run = _finish(process, reached, signum, lambda: tag_digest(client, repo, "canary") == new)
    assert run.code == 128 + signum, run
    name = signal.Signals(signum).name
    assert run.report is not None and run.report["failed"] is True
    assert run.report["headline"].startswith(f"promote interrupted by {name}")
    # The held PUT reached the registry: both tags this run wrote are put back, and named.
    assert run.tags["stable"]["result"] == "restored" and run.tags["stable"]["now"] == old
    assert run.tags["canary"]["result"] == "restored" and run.tags["canary"]["now"] is None
    assert (tag_digest(client, repo, "stable"), tag_digest(client, repo, "canary")) == (old, None)
    history = _history(client, repo)
    assert history.records == [] and history.unfinished == []  # nothing half-recorded
    assert run.report["result"]["record_state"] == "not stored"


def test_sigint_while_the_record_is_stored_removes_it_and_puts_tags_back(
    registry: Registry, tmp_path: Path
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/record")
    client = RegistryClient(environ={})
    hook, reached = _hold_at("PUT", _record_put, "stall")
    with faults.start(registry.host, hook=hook, stall_s=5) as proxy:
        process = _gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path)
        run = _finish(process, reached, signal.SIGINT, lambda: bool(_history(client, repo).records))
    assert run.code == 130, run
    assert tag_digest(client, repo, "stable") == old
    assert tag_digest(client, repo, "3.0.0") is None
    assert run.report is not None and run.report["result"]["record_state"] == "removed"
    history = _history(client, repo)
    assert history.records == [] and history.unfinished == []


def test_a_write_landing_after_the_run_leaves_an_intent_the_same_promote_completes(
    registry: Registry, tmp_path: Path, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/late-write")
    client = RegistryClient(environ={})
    # The PUT of stable reaches the registry 3 s late: the run gives up on it after 1 s, reads
    # it for the 0.2 s consistency window and once more while putting tags back, finds stable
    # still at old, and ends; then the write lands. (Within the window, the run would have
    # seen it land: the test below.)
    hook, _ = _hold_at("PUT", _tag_put("stable"), "delay")
    window = {"GPUSHIP_RELEASE__CONSISTENCY_WINDOW": "0.2"}
    with faults.start(registry.host, hook=hook, delay_s=3) as proxy:
        run = _finish(_gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path, window))
        _wait_for(lambda: tag_digest(client, repo, "stable") == new)
    assert run.code == 3, run
    assert run.report is not None and run.report["result"]["record_state"] == "intent"
    assert tag_digest(client, repo, "stable") == new  # landed after the run ended
    history = _history(client, repo)
    assert history.records == []
    (intent,) = history.unfinished
    assert intent.id == run.report["result"]["record"]["id"]
    assert {c.tag: (c.before, c.after) for c in intent.tags}["stable"] == (old, new)
    # `history` tells it as it is.
    shown = run_cli("history", f"{repo}:stable")
    assert shown.code == 0 and "1 unfinished" in shown.report["headline"], shown
    assert shown.report["result"]["current_release"] == intent.id
    # The same promote again completes that release, under its id, with its before digests.
    again = run_cli(*_promote(registry.host, repo, new, "3.0.0"))
    assert again.code == 0, again
    assert again.report["result"]["record"]["id"] == intent.id
    assert "completing its interrupted run" in again.report["headline"]
    history = _history(client, repo)
    assert [r.id for r in history.records] == [intent.id] and history.unfinished == []
    assert {c.tag: c.before for c in history.records[0].tags}["stable"] == old
    # And rollback works from it.
    back = run_cli("rollback", f"{repo}:stable")
    assert back.code == 0, back
    assert tag_digest(client, repo, "stable") == old


def test_a_write_landing_late_within_the_consistency_window_is_the_runs_own(
    registry: Registry, tmp_path: Path, run_cli: RunCli
):
    """The same late PUT of stable (its answer lost after 1 s, applied 2 s late), within the
    consistency window (default 10 s): the run reads stable until the write shows, so it
    confirms its own write, goes on and records the release."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/late-in-window")
    client = RegistryClient(environ={})
    hook, _ = _hold_at("PUT", _tag_put("stable"), "delay")
    with faults.start(registry.host, hook=hook, delay_s=2) as proxy:
        run = _finish(_gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path))
    assert run.code == 0, run
    assert run.report is not None and run.report["result"]["record_state"] == "stored"
    assert {tag: entry["result"] for tag, entry in run.tags.items()} == {
        "stable": "written",
        "canary": "written",
        "3.0.0": "written",
    }
    assert [tag_digest(client, repo, t) for t in ("stable", "canary", "3.0.0")] == [new] * 3
    history = _history(client, repo)
    assert [r.id for r in history.records] == [run.report["result"]["record"]["id"]]
    assert history.unfinished == []
    assert {c.tag: c.before for c in history.records[0].tags}["stable"] == old


def _wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the held write never reached the registry"
        time.sleep(0.05)


def test_registry_gone_mid_promote_leaves_an_intent_rollback_can_undo(
    registry: Registry, tmp_path: Path, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/gone")
    client = RegistryClient(environ={})
    # stable is written, then the registry goes away at canary's PUT: nothing can be put back.
    hook, _ = _hold_at("PUT", _tag_put("canary"), "gone")
    with faults.start(registry.host, hook=hook) as proxy:
        run = _finish(_gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path))
    assert run.code == 3, run
    assert run.report is not None and run.report["result"]["record_state"] == "intent"
    assert "SOME TAGS NOT RESTORED: stable" in run.report["headline"]
    assert tag_digest(client, repo, "stable") == new
    (intent,) = _history(client, repo).unfinished
    # rollback reads the unfinished release's move of stable and undoes it.
    back = run_cli("rollback", f"{repo}:stable")
    assert back.code == 0, back
    assert back.report["result"]["record"]["rollback_of"] == intent.id
    assert tag_digest(client, repo, "stable") == old


def test_registry_gone_mid_rollback_is_completed_by_the_same_rollback(
    registry: Registry, tmp_path: Path, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/rollback-gone")
    client = RegistryClient(environ={})
    assert run_cli(*_promote(registry.host, repo, new, "3.0.0")).code == 0
    # The rollback writes stable, then the registry goes away as it stores its record.
    hook, _ = _hold_at("PUT", _record_put, "gone")
    with faults.start(registry.host, hook=hook) as proxy:
        run = _finish(_gpuship(["rollback", f"{proxy.host}/{repo.name}:stable"], tmp_path))
    assert run.code == 3, run
    assert tag_digest(client, repo, "stable") == old
    (intent,) = _history(client, repo).unfinished
    assert intent.kind == "rollback"
    # Running it again completes that rollback: it does not roll back further (to `new`).
    again = run_cli("rollback", f"{repo}:stable")
    assert again.code == 0, again
    assert again.report["result"]["record"]["id"] == intent.id
    assert tag_digest(client, repo, "stable") == old
    history = _history(client, repo)
    assert history.unfinished == [] and history.records[-1].id == intent.id


def test_sigterm_during_a_rollback_puts_the_tag_back(
    registry: Registry, tmp_path: Path, run_cli: RunCli
):
    repo, _, new = stable_and_candidate(registry.url, registry.host, "stop/rollback-term")
    client = RegistryClient(environ={})
    assert run_cli(*_promote(registry.host, repo, new, "3.0.0")).code == 0
    hook, reached = _hold_at("PUT", _tag_put("stable"), "stall")
    with faults.start(registry.host, hook=hook, stall_s=5) as proxy:
        process = _gpuship(["rollback", f"{proxy.host}/{repo.name}:stable"], tmp_path)
        run = _finish(
            process, reached, signal.SIGTERM, lambda: tag_digest(client, repo, "stable") != new
        )
    assert run.code == 143, run
    assert run.tags["stable"]["result"] == "restored"
    assert tag_digest(client, repo, "stable") == new  # where the rollback found it
    assert _history(client, repo).unfinished == []


def test_sigterm_during_prune_settles_the_delete_in_flight_and_a_rerun_finishes(
    registry: Registry, tmp_path: Path
):
    name = "stop/prune"
    digests = [
        push(registry.url, name, dated_image(f"stop-prune-{n}", f"2026-0{n}-01T00:00:00Z"), tag=t)
        for n, t in ((1, "nightly-1"), (2, "nightly-2"), (3, "nightly-3"))
    ]
    (tmp_path / "gpuship.yaml").write_text(
        "release:\n  retention:\n    keep:\n      - pattern: 'nightly-.*'\n        newest: 1\n"
    )
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    hook, reached = _hold_at("DELETE", lambda path: True, "stall")
    with faults.start(registry.host, hook=hook, stall_s=5) as proxy:
        process = _gpuship(["prune", f"{proxy.host}/{name}", "--apply"], tmp_path)
        present = [lambda d=d: client.head_manifest(repo.at(d)) is not None for d in digests[:2]]
        run = _finish(process, reached, signal.SIGTERM, lambda: not all(p() for p in present))
    assert run.code == 143, run
    assert run.report is not None and run.report["failed"] is True
    result = run.report["result"]
    # The held DELETE reached the registry: read again, it is reported deleted.
    assert len(result["deleted"]) == 1 and result["unknown"] == {}
    (gone,) = result["deleted"]
    assert client.head_manifest(repo.at(gone)) is None
    again = _finish(_gpuship(["prune", f"{registry.host}/{name}", "--apply"], tmp_path))
    assert again.code == 0, again
    remaining = {d for d in digests[:2] if client.head_manifest(repo.at(d)) is not None}
    assert remaining == set() and tag_digest(client, repo, "nightly-3") == digests[2]


def test_a_cancelled_actions_step_passes_sigint_on_to_promote(registry: Registry, tmp_path: Path):
    """GitHub Actions signals a cancelled step's own process only (bash running the step's
    `run:`), never its children. The promote action's step, run as the runner runs it, must
    get SIGINT to gpuship: the tags are put back and the step outputs say so."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/action")
    client = RegistryClient(environ={})
    hook, reached = _hold_at("PUT", _tag_put("canary"), "stall")
    with faults.start(registry.host, hook=hook, stall_s=5) as proxy:
        environ = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            **ENVIRON,
            "INPUT_SOURCE": f"{proxy.host}/{repo.name}@{new}",
            "INPUT_TAGS": "3.0.0",
            "INPUT_MOVE": "stable canary",
            "INPUT_TO": "",
            "INPUT_DRY_RUN": "false",
            "INPUT_RECORD_FILE": "gpuship-release.json",
            "INPUT_INSTRUCTIONS_FILE": "gpuship-rollback.md",
            "INPUT_CONFIG": "",
        }
        process, outputs = start_action_step("promote", tmp_path, environ)
        run = _finish(
            process, reached, signal.SIGINT, lambda: tag_digest(client, repo, "canary") == new
        )
    assert run.code == 130, run.stderr
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["exit-code"] == "130" and written["failed"] == "true"
    assert written["changed-tags"] == ""  # nothing this run wrote stays
    assert (tag_digest(client, repo, "stable"), tag_digest(client, repo, "canary")) == (old, None)
    assert _history(client, repo).unfinished == []


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def test_the_runners_sigterm_after_sigint_lets_the_undo_finish(registry: Registry, tmp_path: Path):
    """A cancelled job: SIGINT, then SIGTERM 7.5 s later, SIGKILL 2.5 s after that. The SIGTERM
    arrives while the run puts its tags back: it is the same stop, and every tag goes back.
    Before the fix it cut the undo short, leaving `stable` reported "not restored"."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "stop/int-then-term")
    client = RegistryClient(environ={})
    reached, undoing = threading.Event(), threading.Event()
    stable_puts = []

    def hook(index: int, method: str, path: str) -> str | None:
        if method == "PUT" and _tag_put("canary")(path) and not reached.is_set():
            reached.set()
            return "stall"  # the promote's write of canary: SIGINT arrives while it waits
        if method == "PUT" and _tag_put("stable")(path):
            stable_puts.append(index)
            if len(stable_puts) == 2:  # the undo putting stable back, held 3 s
                undoing.set()
                return "delay"
        return None

    # The held restore must not time out: the request timeout is longer than its delay.
    patient = {"GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "10"}
    with faults.start(registry.host, hook=hook, stall_s=5, delay_s=3) as proxy:
        process = _gpuship(_promote(proxy.host, repo, new, "3.0.0"), tmp_path, patient)
        assert reached.wait(timeout=30), "the run never reached canary's PUT"
        _wait_for(lambda: tag_digest(client, repo, "canary") == new)
        process.send_signal(signal.SIGINT)
        assert undoing.wait(timeout=30), "the undo never put stable back"
        process.send_signal(signal.SIGTERM)
        run = _finish(process)
    assert run.code == 130, run
    assert run.report is not None
    assert "repeated signal" not in run.report["headline"] + run.stderr
    assert run.tags["stable"]["result"] == "restored" and run.tags["stable"]["now"] == old
    assert run.tags["canary"]["result"] == "restored" and run.tags["canary"]["now"] is None
    assert (tag_digest(client, repo, "stable"), tag_digest(client, repo, "canary")) == (old, None)
    assert tag_digest(client, repo, "3.0.0") is None
    history = _history(client, repo)
    assert history.records == [] and history.unfinished == []
    assert run.report["result"]["record_state"] == "not stored"


def test_signals_while_the_report_is_written_lose_nothing(registry: Registry, tmp_path: Path):
    """The promote is done when SIGINT and SIGTERM arrive while it writes its report: the
    report, the step outputs and exit 0 still say it shipped. `--output` is a FIFO whose
    buffer the test filled, so the process is held inside that write until the test reads.
    Before the fix the process exited 130 with no step outputs."""
    repo, _, new = stable_and_candidate(registry.url, registry.host, "stop/while-reporting")
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    keeper = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a reader, so the writer's open passes
    filled = _fill(keeper)
    outputs = tmp_path / "github_output"
    outputs.touch()
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs)}
    args = ["--output", str(fifo), *_promote(registry.host, repo, new, "4.0.0")]
    process = _gpuship(args, tmp_path, actions)
    try:
        _wait_for_open(process.pid, fifo)
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGTERM)
        written = _drain(fifo, keeper)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    report = json.loads(written[filled:])
    assert report["failed"] is False and report["result"]["record"]["id"]
    lines = outputs.read_text().splitlines()
    step = dict(line.split("=", 1) for line in lines if "=" in line)
    assert step["failed"] == "false" and step["release-id"] == report["result"]["record"]["id"]
    assert set(step["changed-tags"].split(",")) == {"stable", "canary", "4.0.0"}
    assert "SIGINT and SIGTERM arrived after the promote had finished" in stderr
    assert "::warning title=gpuship::SIGINT and SIGTERM arrived" in stdout
    client = RegistryClient(environ={})
    assert tag_digest(client, repo, "stable") == tag_digest(client, repo, "4.0.0") == new


def _fill(fd: int) -> int:
    """Fill the pipe's buffer to the last byte; how many bytes that took."""
    total = 0
    for size in (4096, 1):
        while True:
            try:
                total += os.write(fd, b" " * size)
            except BlockingIOError:
                break
    return total


def _wait_for_open(pid: int, path: Path) -> None:
    """Until process `pid` has `path` open (it is then inside the write that blocks)."""

    def opened() -> bool:
        fds = Path(f"/proc/{pid}/fd")
        return any(os.path.realpath(fd) == os.path.realpath(path) for fd in fds.iterdir())

    deadline = time.monotonic() + 60
    while not opened():
        assert time.monotonic() < deadline, "the report was never written"
        time.sleep(0.02)


def _drain(fifo: Path, keeper: int) -> bytes:
    """Everything in the FIFO until its writer closes it."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.close(keeper)  # now the writer alone holds it open: its close ends the read
    os.set_blocking(reader, True)
    chunks = []
    while chunk := os.read(reader, 65536):
        chunks.append(chunk)
    os.close(reader)
    return b"".join(chunks)
