"""The stand-in model server of the probe tests: tests/probe_server/model_server.c, built with
`gcc -static` into a FROM scratch image whose ENV sets its behaviour (see the settings at the
top of the C file: latency, planted tail, token streaming, memory per request, overload mode).

The bed's engine has no bridge network, so a published port is never reachable there; the
probe reaches the server with `probe.target.network: host` (the container shares the host's
network namespace and listens on a free port passed as PORT). The server writes its GPU
readings to NVML_LIVE inside a bind-mounted folder; the NVML stand-in serves that file as
the GPU's live readings (the `"live"` key of a host description), so the sampler sees memory
driven by the server's own load.
"""

from __future__ import annotations

import copy
import hashlib
import os
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bed.docker_engine import DockerEngine
from bed.images import FileSpec, build_scratch_image

SOURCE = Path(__file__).resolve().parents[1] / "probe_server" / "model_server.c"
CFLAGS = ("-static", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread")
LIVE_DIR_IN_CONTAINER = "/nvml"


def build_server(cache_dir: Path) -> Path:
    """Compile the server once per source version (cached like the NVML stand-in)."""
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    binary = cache_dir / f"model-server-{key}" / "model_server"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(f".model_server.{os.getpid()}")
    built = subprocess.run(
        ["gcc", *CFLAGS, "-o", str(partial), str(SOURCE)], capture_output=True, text=True
    )
    if built.returncode != 0:
        raise RuntimeError(f"gcc could not build the stand-in model server:\n{built.stderr}")
    partial.replace(binary)
    return binary


def build_server_image(
    engine: DockerEngine, binary: Path, tag: str, behaviour: Mapping[str, str]
) -> str:
    """A FROM scratch image of the server whose ENV is `behaviour`; returns `tag`."""
    build_scratch_image(
        engine,
        tag,
        [{"server": FileSpec(binary.read_bytes(), mode=0o755)}],
        env=behaviour,
        extra_lines=['ENTRYPOINT ["/server"]'],
    )
    return tag


def free_port() -> int:
    """A TCP port nothing listens on now (the server binds it moments later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bed_target(live_dir: Path) -> dict[str, Any]:
    """`probe.target` for the bed: host network on a free port (the engine has no bridge), no
    GPU request (no NVIDIA runtime there), the server's readings written into `live_dir`."""
    port = free_port()
    return {
        "network": "host",
        "port": port,
        "gpus": "none",
        "env": {"PORT": str(port), "NVML_LIVE": f"{LIVE_DIR_IN_CONTAINER}/live.json"},
        "volumes": [f"{live_dir}:{LIVE_DIR_IN_CONTAINER}"],
        "startup-timeout-s": 30,
    }


def live_host(base: Mapping[str, Any], live_file: Path) -> dict[str, Any]:
    """`base` (a bed.hosts description) whose first GPU serves readings from `live_file`."""
    description = copy.deepcopy(dict(base))
    description["gpus"][0]["live"] = str(live_file)
    return description
