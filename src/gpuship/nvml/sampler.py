"""Sample the GPUs through NVML in a background thread while the probe runs (10 Hz default).

Per GPU and sample: memory used and total, utilization, power, clock event (throttle) reasons,
and the memory held by the processes of the thing under test (NVML reports host pids; the
caller says which pids are its own). A reading a GPU or driver cannot give is None. ctypes
releases the GIL during each NVML call, so sampling does not stall the load generator.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpuship.nvml.probe import nvml_failure, optional_reading

Pids = Callable[[], frozenset[int] | None]


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU; `at` is time.monotonic() when it was taken."""

    at: float
    gpu: int
    used_bytes: int
    total_bytes: int
    utilization: int | None
    power_mw: int | None
    event_reasons: int | None
    process_bytes: int | None


class Sampler:
    """Reads the GPUs every `interval` seconds until stopped; `samples` holds the readings."""

    def __init__(self, interval: float, pids: Pids, gpus: Sequence[int] = ()) -> None:
        self.interval = interval
        self._pids = pids
        self._gpus = tuple(gpus)
        self.samples: list[GpuSample] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpuship-nvml", daemon=True)

    def _run(self) -> None:
        import pynvml

        try:
            handles = self._handles(pynvml)
        except pynvml.NVMLError as error:
            self.error = str(nvml_failure(error, "sampling"))
            return
        try:
            next_at = time.monotonic()
            pid_refresh = 0.0
            pids: frozenset[int] | None = None
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= pid_refresh:
                    pids, pid_refresh = self._pids(), now + 1.0
                for index, handle in handles:
                    self.samples.append(_read(pynvml, handle, index, pids, now))
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        except pynvml.NVMLError as error:
            self.error = f"NVML failed while sampling: {error}"
        finally:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()

    def _handles(self, nvml: Any) -> list[tuple[int, Any]]:
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        indexes = [i for i in range(count) if not self._gpus or i in self._gpus]
        return [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in indexes]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def sampling(interval: float, pids: Pids, gpus: Sequence[int] = ()) -> Iterator[Sampler]:
    """Sample while the context is open."""
    sampler = Sampler(interval, pids, gpus)
    sampler.start()
    try:
        yield sampler
    finally:
        sampler.stop()


def _read(nvml: Any, handle: Any, index: int, pids: frozenset[int] | None, at: float) -> GpuSample:
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    rates = optional_reading(nvml, nvml.nvmlDeviceGetUtilizationRates, handle)
    processes = optional_reading(nvml, nvml.nvmlDeviceGetComputeRunningProcesses, handle)
    process_bytes = None
    if processes is not None and pids is not None:
        process_bytes = sum(p.usedGpuMemory or 0 for p in processes if p.pid in pids)
    return GpuSample(
        at=at,
        gpu=index,
        used_bytes=int(memory.used),
        total_bytes=int(memory.total),
        utilization=None if rates is None else int(rates.gpu),
        power_mw=optional_reading(nvml, nvml.nvmlDeviceGetPowerUsage, handle),
        event_reasons=optional_reading(nvml, nvml.nvmlDeviceGetCurrentClocksEventReasons, handle),
        process_bytes=process_bytes,
    )
