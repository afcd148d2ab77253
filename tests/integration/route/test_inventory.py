"""The fleet inventory in a real registry: `gpuship audit --publish` from NVML stand-in hosts,
concurrent runners, --if-older-than (skipped while fresh and unchanged, published at once after
a driver update or a new CDI spec), outages that leave the previous entry intact, and the
runner hook script run for real against the registry and against a stopped one."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bed import faults, hosts
from bed.registry import Registry
from gpuship.compat.audit import RunnerIdentity
from gpuship.reference import parse_repository
from gpuship.registry.client import RegistryClient
from gpuship.route.inventory import entry_tag, read_entry, read_inventory
from json_results import check_output

ROOT = Path(__file__).resolve().parents[3]
HOOK = ROOT / "deploy" / "runner" / "gpuship-audit-hook.sh"
CDI_SPEC = ROOT / "tests" / "data" / "cdi" / "nvidia-550.54.15.yaml"
HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def gpuship(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    check_output(args, done.stdout)
    return done


def runner_env(nvml_host: HostEnv, host: Mapping[str, Any], name: str) -> dict[str, str]:
    return {**nvml_host(host), **NO_DOCKER, "RUNNER_NAME": name}


def entry(registry_host: str, repository: str, name: str) -> Any:
    repo = parse_repository(f"{registry_host}/{repository}")
    tag = entry_tag(RunnerIdentity(hostname=socket.gethostname(), runner_name=name))
    with RegistryClient() as client:
        return read_entry(client, repo, tag)


def stopped_registry() -> str:
    """A loopback port nothing listens on: a registry that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_publish_replaces_the_runner_entry_and_keeps_the_others(
    registry: Registry, nvml_host: HostEnv
) -> None:
    fleet = f"{registry.host}/route/publish"
    first = gpuship(
        ["audit", "--publish", fleet, "--label", "gpu-a100", "--format", "json"],
        runner_env(nvml_host, hosts.A100_535, "a100-1"),
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["result"]["published"] is True
    other = gpuship(
        ["audit", "--publish", fleet, "--label", "gpu-h100"],
        runner_env(nvml_host, hosts.H100_570, "h100-1"),
    )
    assert other.returncode == 0, other.stderr
    # The A100 host got a driver update: its entry is replaced, the H100's stays.
    again = gpuship(
        ["audit", "--publish", fleet, "--label", "gpu-a100"],
        runner_env(nvml_host, hosts.A100_550, "a100-1"),
    )
    assert again.returncode == 0, again.stderr
    assert "replacing the audit taken" in again.stdout
    with RegistryClient() as client:
        inventory = read_inventory(client, parse_repository(fleet))
    drivers = {e.audit.runner.runner_name: e.audit.nvml.driver_version for e in inventory.entries}
    assert drivers == {"a100-1": "550.144.03", "h100-1": "570.195.03"}
    assert inventory.unreadable == ()


def test_concurrent_runners_never_lose_each_other(registry: Registry, nvml_host: HostEnv) -> None:
    fleet = f"{registry.host}/route/concurrent"
    names = [f"runner-{i}" for i in range(6)]
    results: dict[str, int] = {}

    def publish(name: str) -> None:
        done = gpuship(["audit", "--publish", fleet], runner_env(nvml_host, hosts.L4_550, name))
        results[name] = done.returncode

    threads = [threading.Thread(target=publish, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == dict.fromkeys(names, 0)
    with RegistryClient() as client:
        inventory = read_inventory(client, parse_repository(fleet))
    assert sorted(e.audit.runner.runner_name for e in inventory.entries) == names


def test_if_older_than_skips_a_fresh_entry_that_reads_as_the_host(
    registry: Registry, nvml_host: HostEnv
) -> None:
    fleet = f"{registry.host}/route/fresh"
    env = runner_env(nvml_host, hosts.A100_550, "fresh-1")
    assert gpuship(["audit", "--publish", fleet, "--label", "gpu-a100"], env).returncode == 0
    published = entry(registry.host, "route/fresh", "fresh-1")
    skipped = gpuship(
        ["audit", "--publish", fleet, "--label", "gpu-a100", "--if-older-than", "30m"], env
    )
    assert skipped.returncode == 0, skipped.stderr
    assert "not published" in skipped.stdout and "newer than 30m" in skipped.stdout
    assert "the host reads as it says" in skipped.stdout
    assert entry(registry.host, "route/fresh", "fresh-1").digest == published.digest
    # The host is read every time: NVML that fails to initialise is exit 3, even when fresh.
    broken = runner_env(nvml_host, hosts.DRIVER_NOT_LOADED, "fresh-1")
    unread = gpuship(["audit", "--publish", fleet, "--if-older-than", "30m"], broken)
    assert unread.returncode == 3 and "driver not loaded" in unread.stderr.lower()
    assert entry(registry.host, "route/fresh", "fresh-1").digest == published.digest


def test_a_driver_update_is_published_at_once_however_fresh_the_entry(
    registry: Registry, nvml_host: HostEnv
) -> None:
    fleet = f"{registry.host}/route/updated"
    args = ["audit", "--publish", fleet, "--label", "gpu-a100", "--if-older-than", "30m"]
    first = gpuship(args, runner_env(nvml_host, hosts.A100_535, "upd-1"))
    assert first.returncode == 0, first.stderr
    updated = gpuship(args, runner_env(nvml_host, hosts.A100_550, "upd-1"))
    assert updated.returncode == 0, updated.stderr
    assert "(driver 535.230.02 -> 550.144.03)" in updated.stdout
    assert entry(registry.host, "route/updated", "upd-1").audit.nvml.driver_version == "550.144.03"


def test_a_new_cdi_spec_is_published_at_once(
    registry: Registry, nvml_host: HostEnv, tmp_path: Path
) -> None:
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    config = tmp_path / "gpuship.yaml"
    config.write_text(f"verify:\n  cdi-spec-dirs: [{cdi}]\n")
    fleet = f"{registry.host}/route/cdi"
    args = ["audit", "--publish", fleet, "--label", "gpu-h100", "--if-older-than", "30m"]
    args += ["--config", str(config)]
    env = runner_env(nvml_host, hosts.H100_570, "cdi-1")
    assert gpuship(args, env).returncode == 0
    before = entry(registry.host, "route/cdi", "cdi-1")
    assert gpuship(args, env).returncode == 0  # unchanged: skipped
    assert entry(registry.host, "route/cdi", "cdi-1").digest == before.digest
    # `nvidia-ctk cdi generate` wrote a spec (here, one left from the 550 driver).
    shutil.copy(CDI_SPEC, cdi / "nvidia.yaml")
    done = gpuship(args, env)
    assert done.returncode == 0, done.stderr
    assert "(CDI specs changed)" in done.stdout
    after = entry(registry.host, "route/cdi", "cdi-1")
    assert after.digest != before.digest
    assert [s.driver_versions for s in after.audit.container.cdi_specs] == [["550.54.15"]]


def test_publishing_without_labels_warns(registry: Registry, nvml_host: HostEnv) -> None:
    fleet = f"{registry.host}/route/bare"
    done = gpuship(
        ["audit", "--publish", fleet, "--format", "json"],
        runner_env(nvml_host, hosts.L4_550, "bare-1"),
    )
    assert done.returncode == 0, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert finding["rule"] == "GSQ204" and finding["severity"] == "warning"
    assert "runner bare-1 publishes its audit without labels" in finding["message"]


def test_outage_mid_publish_exits_non_zero_and_leaves_the_previous_entry(
    registry: Registry, nvml_host: HostEnv
) -> None:
    repository = "route/outage"
    env = runner_env(nvml_host, hosts.A100_535, "out-1")
    assert gpuship(["audit", "--publish", f"{registry.host}/{repository}"], env).returncode == 0
    before = entry(registry.host, repository, "out-1")
    # The registry goes away when the new audit's layer is uploaded, before the tag moves.
    down = False

    def outage(index: int, method: str, path: str) -> str | None:
        nonlocal down  # from the first upload on, every answer is 503 (backend gone)
        down = down or (method == "POST" and "/blobs/uploads/" in path)
        return "503" if down else None

    with faults.start(registry.host, hook=outage) as proxy:
        env = runner_env(nvml_host, hosts.A100_550, "out-1")
        failed = gpuship(["audit", "--publish", f"{proxy.host}/{repository}"], env)
    assert failed.returncode == 3, failed.stderr
    message = failed.stderr.strip()
    assert message.startswith("gpuship: error: audit not published to")
    assert "HTTP 503" in message and "the entry still holds the audit taken" in message
    assert "Traceback" not in failed.stderr and len(message.splitlines()) == 1
    after = entry(registry.host, repository, "out-1")
    assert after.digest == before.digest
    assert after.audit.nvml.driver_version == "535.230.02"


def test_stopped_registry_is_exit_3_with_one_line(nvml_host: HostEnv) -> None:
    env = runner_env(nvml_host, hosts.A100_550, "down-1")
    started = time.monotonic()
    done = gpuship(["audit", "--publish", f"{stopped_registry()}/fleet"], env)
    assert done.returncode == 3
    assert done.stderr.startswith("gpuship: error: ") and "connection refused" in done.stderr
    assert time.monotonic() - started < 60


def _hook(env: Mapping[str, str], timeout_s: int = 60) -> subprocess.CompletedProcess[str]:
    """The hook as the runner starts it: `bash -e` with the runner's environment."""
    return subprocess.run(
        ["bash", "-e", str(HOOK)], env=dict(env), capture_output=True, text=True, timeout=timeout_s
    )


def _hook_env(nvml_host: HostEnv, fleet: str, **extra: str) -> dict[str, str]:
    venv_bin = Path(sys.executable).parent
    return {
        **runner_env(nvml_host, hosts.H100_570, "hook-1"),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "GPUSHIP": str(venv_bin / "gpuship"),
        "GPUSHIP_FLEET": fleet,
        "GPUSHIP_RUNNER_LABELS": "gpu-h100, linux",
        "GITHUB_ACTIONS": "true",
        **extra,
    }


def test_runner_hook_publishes_then_skips_while_fresh(
    registry: Registry, nvml_host: HostEnv
) -> None:
    fleet = f"{registry.host}/route/hook"
    first = _hook(_hook_env(nvml_host, fleet))
    assert first.returncode == 0, first.stderr
    published = entry(registry.host, "route/hook", "hook-1")
    assert published.audit.runner.labels == ["gpu-h100", "linux"]
    second = _hook(_hook_env(nvml_host, fleet))
    assert second.returncode == 0
    assert "not published" in second.stdout
    assert entry(registry.host, "route/hook", "hook-1").digest == published.digest


def test_runner_hook_warns_when_the_runner_has_no_labels(
    registry: Registry, nvml_host: HostEnv
) -> None:
    # fail-on: warning turns gpuship's GSQ204 into exit 1; the hook still knows it published.
    env = _hook_env(
        nvml_host,
        f"{registry.host}/route/hook-bare",
        GPUSHIP_RUNNER_LABELS="",
        GPUSHIP_FAIL_ON="warning",
    )
    done = _hook(env)
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "GSQ204" in output, output
    assert "GPUSHIP_RUNNER_LABELS is empty" not in output  # gpuship's warning, not a second one
    assert "not published" not in output
    assert entry(registry.host, "route/hook-bare", "hook-1") is not None


def test_runner_hook_never_fails_the_job_when_the_registry_is_down(nvml_host: HostEnv) -> None:
    env = _hook_env(nvml_host, f"{stopped_registry()}/fleet", GPUSHIP_AUDIT_TIMEOUT="30")
    started = time.monotonic()
    done = _hook(env)
    assert done.returncode == 0
    assert "::warning title=gpuship audit::runner audit not published" in done.stdout
    assert time.monotonic() - started < 40


def test_runner_hook_gives_up_at_its_timeout(nvml_host: HostEnv) -> None:
    # A registry that accepts connections and never answers: the hook's own bound ends it.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        fleet = f"127.0.0.1:{silent.getsockname()[1]}/fleet"
        started = time.monotonic()
        done = _hook(_hook_env(nvml_host, fleet, GPUSHIP_AUDIT_TIMEOUT="3"))
    assert done.returncode == 0
    assert "no answer within 3s" in done.stdout
    assert time.monotonic() - started < 15
