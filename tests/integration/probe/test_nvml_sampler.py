"""The NVML sampler against the real pynvml and the stand-in libnvidia-ml, whose GPU serves
live readings from a file a process rewrites (the `"live"` key, bed.probe_server)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from bed import hosts
from bed.probe_server import live_host
from gpuship.nvml.sampler import sampling

pytestmark = pytest.mark.integration

Describe = Callable[[Mapping[str, Any]], None]
MIB = 2**20


def write_live(path: Path, used_mib: int, processes: list[dict[str, Any]]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(
        json.dumps(
            {
                "memory_used": used_mib * MIB,
                "utilization_gpu": 40,
                "power_usage": 71000,
                "clocks_event_reasons": 4,
                "processes": processes,
            }
        )
    )
    temporary.replace(path)


def test_samples_follow_the_live_file_at_10_hz(nvml_in_process: Describe, tmp_path: Path) -> None:
    live = tmp_path / "live.json"
    own_namespace = os.readlink("/proc/self/ns/pid")
    me = {"pid": os.getpid(), "pid_namespace": own_namespace, "used_memory": 5000 * MIB}
    stranger = {"pid": 999_999_999, "used_memory": 7 * MIB}
    write_live(live, 1000, [me, stranger])
    nvml_in_process(live_host(hosts.L4_550, live))

    def rise() -> None:
        time.sleep(0.5)
        write_live(live, 9000, [me, stranger])

    writer = threading.Thread(target=rise)
    with sampling(0.1, lambda: frozenset({os.getpid()})) as sampler:
        writer.start()
        time.sleep(1.2)
    writer.join()

    assert sampler.error is None
    samples = sampler.samples
    assert 9 <= len(samples) <= 14
    used = [s.used_bytes // MIB for s in samples]
    assert used[0] == 1000 and used[-1] == 9000 and sorted(used) == used
    last = samples[-1]
    assert last.total_bytes == hosts.L4_550["gpus"][0]["memory_total"]
    assert (last.utilization, last.power_mw, last.event_reasons) == (40, 71000, 4)
    # Only this process's memory counts: the stranger's pid is not ours.
    assert last.process_bytes == 5000 * MIB


def test_a_gpu_without_live_readings_reports_what_nvml_does_not_support(
    nvml_in_process: Describe,
) -> None:
    nvml_in_process(hosts.A100_550)
    with sampling(0.05, lambda: None) as sampler:
        time.sleep(0.3)
    first = sampler.samples[0]
    assert first.used_bytes == hosts.A100_550["gpus"][0]["memory_used"]
    assert (first.utilization, first.power_mw, first.process_bytes) == (None, None, None)


def test_no_driver_is_an_error_said_once(nvml_in_process: Describe) -> None:
    nvml_in_process(hosts.DRIVER_NOT_LOADED)
    with sampling(0.05, lambda: None) as sampler:
        time.sleep(0.2)
    assert sampler.samples == []
    assert sampler.error is not None and "driver not loaded" in sampler.error.lower()
