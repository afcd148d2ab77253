"""Helpers for the build-stage integration tests: run gpuship on a sample project copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bed.oci import make_image, push
from bed.registry import Registry
from json_results import check_output

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "workflows-examples" / "sample-project"
GPUSHIP = str(Path(sys.executable).with_name("gpuship"))
PLACEHOLDER_REGISTRY = "localhost:5000"


@dataclass(frozen=True)
class Result:
    """One finished gpuship run: exit code, streams and the step outputs it wrote."""

    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


def read_outputs(path: Path) -> dict[str, str]:
    """Parse a $GITHUB_OUTPUT file (single-line and heredoc entries)."""
    outputs: dict[str, str] = {}
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            outputs[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        name, _, value = line.partition("=")
        outputs[name] = value
        index += 1
    return outputs


@dataclass(frozen=True)
class SampleProject:
    """A copy of the sample project whose registry is the bed registry."""

    directory: Path
    registry: Registry
    env: Mapping[str, str]

    def gpuship(self, *args: str, extra_env: Mapping[str, str] | None = None) -> Result:
        outputs = self.directory / f".outputs-{os.getpid()}"
        outputs.write_text("")
        env = {
            **self.env,
            **(extra_env or {}),
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(outputs),
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [GPUSHIP, *args],
            cwd=self.directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        check_output(args, done.stdout)
        return Result(done.returncode, done.stdout, done.stderr, read_outputs(outputs))

    def matrix(self) -> list[dict[str, object]]:
        result = self.gpuship("matrix", "--format", "json")
        assert result.code == 0, result.stderr
        cells: list[dict[str, object]] = json.loads(result.outputs["matrix"])["include"]
        return cells


def push_base(registry: Registry, reference: str, cuda: str) -> str:
    """Push a tiny CUDA-runtime stand-in under `reference`; returns its digest."""
    repository_tag = reference.split("/", 1)[1]
    repository, _, tag = repository_tag.rpartition(":")
    image = make_image(
        [
            {
                "etc/os-release": b'ID=ubuntu\nVERSION_ID="22.04"\n',
                f"usr/local/cuda-{cuda}/version.json": json.dumps(
                    {"cuda": {"name": "CUDA SDK", "version": f"{cuda}.1"}}
                ).encode(),
            }
        ],
        env={
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "CUDA_VERSION": f"{cuda}.1",
            "NVIDIA_REQUIRE_CUDA": f"cuda>={cuda}",
        },
    )
    return push(registry.url, repository, image, tag=tag)
