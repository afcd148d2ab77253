"""The NVML stand-in: build tests/nvml_stub/nvml_stub.c into libnvidia-ml.so.1 and point
processes at it, so the real pynvml reads a host the test describes.

Host description (a dict, written as JSON to the file named by $GPUSHIP_FAKE_NVML; build one
with `bed.hosts`):

    {
      "init_error": 9,                       # optional: nvmlInit* returns this NVML error
      "device_nodes": ["/dev/nvidiactl"],    # optional: nvmlInit opens each; one it cannot
                                             # open (a device rule denies it) -> Unknown Error
      "driver_version": "550.144.03",        # nvmlSystemGetDriverVersion
      "cuda_driver_version": 12040,          # nvmlSystemGetCudaDriverVersion
      "cuda_driver_version_v2": 12040,       # optional, defaults to cuda_driver_version
      "nvml_version": "12.550.144.03",       # nvmlSystemGetNVMLVersion
      "fail": {"nvmlSystemGetCudaDriverVersion_v2": 12},  # optional forced errors by C symbol
      "gpus": [{                             # [] = no GPU (count 0)
        "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-...", "brand": 14,
        "architecture": 7, "compute_capability": [8, 0],
        "memory_total": 85899345920, "memory_used": 0, "memory_reserved": 0,   # bytes
        "pci_bus_id": "00000000:07:00.0", "pci_device_id": 548540638,
        "persistence_mode": 1,
        "mig_mode": [1, 1],                  # [current, pending]; absent = MIG not supported
        "max_mig_devices": 7,
        "mig_devices": [{"name": "...", "uuid": "MIG-...", "memory_total": ...}],
        "ecc_errors": {"volatile_corrected": 0, "volatile_uncorrected": 0,
                       "aggregate_corrected": 0, "aggregate_uncorrected": 0},
        "fail": {"nvmlDeviceGetMigMode": 3}, # forced errors on this GPU's handle only
        "live": "/path/live.json"            # optional: readings that change, read at each call:
                                             # {"memory_used", "utilization_gpu",
                                             #  "utilization_memory", "power_usage" (mW),
                                             #  "clocks_event_reasons", "processes": [{"pid",
                                             #  "used_memory", "pid_namespace"?}]}
      }]
    }

A reading that is absent (or null) makes its NVML call return NVML_ERROR_NOT_SUPPORTED.
Forced-error keys are the C symbols pynvml calls (e.g. "nvmlDeviceGetCount_v2",
"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetPciInfo_v3").
MIG device handles share their GPU's brand, architecture, compute capability and ECC.
Without $GPUSHIP_FAKE_NVML, nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED; an unreadable
or malformed file prints one line on stderr and fails with NVML_ERROR_UNKNOWN.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

STUB_SOURCE = Path(__file__).resolve().parents[1] / "nvml_stub" / "nvml_stub.c"
SONAME = "libnvidia-ml.so.1"
DESCRIPTION_ENV = "GPUSHIP_FAKE_NVML"
COMPILER = "gcc"
CFLAGS = (
    "-std=c11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fPIC",
    "-fvisibility=hidden",
    "-shared",
    f"-Wl,-soname,{SONAME}",
)


def build_stub(cache_dir: Path) -> Path:
    """Compile the stand-in once per source version; return the dir holding libnvidia-ml.so.1.

    The output dir is named by a hash of the source and flags, and the library is renamed into
    place atomically, so concurrent test sessions share one build safely.
    """
    key = hashlib.sha256(STUB_SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    out_dir = cache_dir / f"nvml-stub-{key}"
    library = out_dir / SONAME
    if library.exists():
        return out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / f".{SONAME}.{os.getpid()}"
    compiled = subprocess.run(
        [COMPILER, *CFLAGS, "-o", str(partial), str(STUB_SOURCE)], capture_output=True, text=True
    )
    if compiled.returncode != 0:
        raise RuntimeError(f"{COMPILER} could not build the NVML stand-in:\n{compiled.stderr}")
    partial.replace(library)
    return out_dir


def write_description(description: Mapping[str, Any], path: Path) -> Path:
    """Write a host description as JSON (the stand-in reads it at nvmlInit)."""
    path.write_text(json.dumps(description, indent=1))
    return path


def stub_env(stub_dir: Path, description_path: Path, base: Mapping[str, str]) -> dict[str, str]:
    """`base` plus LD_LIBRARY_PATH (stub first) and $GPUSHIP_FAKE_NVML."""
    env = dict(base)
    previous = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{stub_dir}:{previous}" if previous else str(stub_dir)
    env[DESCRIPTION_ENV] = str(description_path)
    return env


def system_nvml_library() -> str | None:
    """The system libnvidia-ml (Debian libnvidia-ml1) as the dynamic linker finds it, if any."""
    return ctypes.util.find_library("nvidia-ml")


def system_nvml_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without any stand-in settings, so pynvml loads the system libnvidia-ml."""
    env = {key: value for key, value in base.items() if key != DESCRIPTION_ENV}
    kept = [
        part
        for part in env.get("LD_LIBRARY_PATH", "").split(":")
        if part and not (Path(part) / SONAME).exists()
    ]
    env.pop("LD_LIBRARY_PATH", None)
    if kept:
        env["LD_LIBRARY_PATH"] = ":".join(kept)
    return env


@contextlib.contextmanager
def stub_in_process(stub_dir: Path) -> Iterator[None]:
    """Make this process's pynvml use the stand-in while the context is open.

    glibc matches a later dlopen("libnvidia-ml.so.1") against the soname of an already loaded
    object, so loading the stand-in by path first makes pynvml's own CDLL pick it up. When
    pynvml already holds another libnvidia-ml (an earlier test loaded the system one), its
    handle and function-pointer cache are swapped for the stand-in's and restored afterwards.
    Once loaded through the soname, the stand-in stays this process's libnvidia-ml; without
    $GPUSHIP_FAKE_NVML it answers "Driver Not Loaded" like the system library on this machine.
    """
    import pynvml

    stub = ctypes.CDLL(str(stub_dir / SONAME), mode=ctypes.RTLD_GLOBAL)
    held = pynvml.nvmlLib
    if held is None or _same_object(held, stub):
        yield
        return
    saved_cache = dict(pynvml._nvmlGetFunctionPointer_cache)
    pynvml.nvmlLib = stub
    pynvml._nvmlGetFunctionPointer_cache.clear()
    try:
        yield
    finally:
        pynvml.nvmlLib = held
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlGetFunctionPointer_cache.update(saved_cache)


def _same_object(first: ctypes.CDLL, second: ctypes.CDLL) -> bool:
    def address(library: ctypes.CDLL) -> int | None:
        return ctypes.cast(library.nvmlInitWithFlags, ctypes.c_void_p).value

    return address(first) == address(second)


def shutdown_all() -> None:
    """Undo every nvmlInit a test left open, so the next init reads its own description."""
    import pynvml

    if pynvml.nvmlLib is None:
        return
    for _ in range(64):
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            return


PROBE_SCRIPT = Path(__file__).resolve().with_name("pynvml_probe.py")


def read_with_pynvml(env: Mapping[str, str]) -> dict[str, Any]:
    """Run bed/pynvml_probe.py under `env` and return what the real pynvml read."""
    result = subprocess.run(
        [sys.executable, str(PROBE_SCRIPT)],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pynvml probe exited {result.returncode}:\n{result.stderr}")
    readings: dict[str, Any] = json.loads(result.stdout)
    return readings
