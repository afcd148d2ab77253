"""Benchmark: the sample project's Dockerfile template vs a naive single-stage Dockerfile.

Starts a private dockerd and registry (the test bed's helpers), copies
workflows-examples/sample-project, adds 64 MiB of model weights under models/ (the template
keeps them out through .dockerignore and mounts them at run time; the naive image copies the
whole context, weights included) and 32 MiB of stand-in installed dependencies under vendor/
(both images hold them; the template caches them in its deps stage), and measures through
`gpuship build` (build + push):

- cold build, then warm rebuild after a code-only change (app/serve.py), for both;
- image size (uncompressed, engine) and pushed size (compressed layers, registry manifest).

Usage: .venv/bin/python bench/build/run.py   (needs dockerd and docker-registry; root)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from bed.docker_engine import run_docker_engine  # noqa: E402
from bed.oci import make_image, push  # noqa: E402
from bed.registry import run_registry  # noqa: E402

WORK = ROOT / "bench" / ".work" / "build"
GPUSHIP = str(Path(sys.executable).with_name("gpuship"))
WEIGHTS_BYTES = 64 * 1024 * 1024
# Stand-in for installed wheels (a real torch install is GBs): what the deps layer caches.
DEPS_BYTES = 32 * 1024 * 1024
COMMIT = "feedface" * 5

NAIVE_DOCKERFILE = """\
# The usual first attempt: one stage, the whole repository (weights too) copied at once.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG PYTHON_VERSION
COPY . /opt/app/
ENV PYTHONPATH=/opt/app/vendor MODEL_DIR=/opt/app/models
ENTRYPOINT ["python3", "/opt/app/app/serve.py"]
"""

NAIVE_IMAGE = """\
  - name: naive
    role: inference
    dockerfile: naive/Dockerfile
    context: naive
    repository: {registry}/bench/naive
    base-image: "{registry}/bench/cuda-base:{{cuda}}-runtime"
    axes:
      cuda: ["12.6"]
      python: ["3.12"]
    build-args:
      PYTHON_VERSION: "{{python}}"
"""


def gpuship(directory: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [GPUSHIP, *args], cwd=directory, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"gpuship {' '.join(args)} failed:\n{done.stderr}\n{done.stdout}")
    return done


def timed_build(
    directory: Path, env: dict[str, str], image: str
) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    done = gpuship(
        directory,
        env,
        "build",
        "--image",
        image,
        "--set",
        "cuda=12.6",
        "--set",
        "python=3.12",
        "--commit",
        COMMIT,
        "--network",
        "none",
        "--no-image-checks",
        "--format",
        "json",
    )
    elapsed = time.perf_counter() - start
    result: dict[str, object] = json.loads(done.stdout)["result"]
    return elapsed, result


def manifest_layers(registry_url: str, image: str) -> dict[str, int]:
    """Layer digest -> compressed size of a pushed image (registry manifest)."""
    import requests

    name, _, digest = image.partition("@")
    repository = name.split("/", 1)[1]
    response = requests.get(
        f"{registry_url}/v2/{repository}/manifests/{digest}",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
        timeout=30,
    )
    response.raise_for_status()
    return {layer["digest"]: int(layer["size"]) for layer in response.json()["layers"]}


def _ratio(
    top: dict[str, object], top_key: str, bottom: dict[str, object], bottom_key: str
) -> float:
    return round(float(str(top[top_key])) / float(str(bottom[bottom_key])), 3)


def main() -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    with run_registry(WORK / "registry") as registry, run_docker_engine(WORK) as engine:
        project = WORK / "sample"
        shutil.copytree(ROOT / "workflows-examples" / "sample-project", project)
        config = project / "gpuship.yaml"
        text = (
            config.read_text()
            .replace("localhost:5000", registry.host)
            .replace("/sample/", "/bench/")
        )
        config.write_text(text + NAIVE_IMAGE.format(registry=registry.host))
        (project / "models").mkdir()
        (project / "models" / "model.safetensors").write_bytes(os.urandom(WEIGHTS_BYTES))
        (project / "vendor" / "sampledeps" / "_native.so").write_bytes(os.urandom(DEPS_BYTES))
        naive = project / "naive"
        naive.mkdir()
        for entry in ("app", "vendor", "models", "requirements.txt"):
            source = project / entry
            if source.is_dir():
                shutil.copytree(source, naive / entry)
            else:
                shutil.copy(source, naive / entry)
        (naive / "Dockerfile").write_text(NAIVE_DOCKERFILE)
        for cuda in ("12.4", "12.6"):
            base = make_image(
                [{"etc/os-release": b"ID=ubuntu\n"}], env={"CUDA_VERSION": f"{cuda}.1"}
            )
            push(registry.url, "bench/cuda-base", base, tag=f"{cuda}-runtime")
        env = {**os.environ, **engine.env}
        gpuship(project, env, "lock")
        results: dict[str, dict[str, object]] = {}
        for image, code_file in (
            ("sample", project / "app" / "serve.py"),
            ("naive", naive / "app" / "serve.py"),
        ):
            cold_s, cold = timed_build(project, env, image)
            code_file.write_text(code_file.read_text() + "\n# a code-only change\n")
            warm_s, warm = timed_build(project, env, image)
            local = engine.client.images.get(str(warm["image_id"]))
            cold_layers = manifest_layers(registry.url, str(cold["image"]))
            warm_layers = manifest_layers(registry.url, str(warm["image"]))
            new_layers = {d: s for d, s in warm_layers.items() if d not in cold_layers}
            results[image] = {
                "cold_build_s": round(cold_s, 2),
                "warm_rebuild_s": round(warm_s, 2),
                "cold_cached_steps": f"{cold['cached_steps']}/{cold['steps']}",
                "warm_cached_steps": f"{warm['cached_steps']}/{warm['steps']}",
                "image_size_bytes": int(local.attrs["Size"]),
                "pushed_size_bytes": sum(warm_layers.values()),
                "warm_new_layer_bytes": sum(new_layers.values()),
                "warm_reused_layer_bytes": sum(warm_layers.values()) - sum(new_layers.values()),
            }
        sample, naive_result = results["sample"], results["naive"]
        ratios = {
            "sample_warm_over_cold": _ratio(sample, "warm_rebuild_s", sample, "cold_build_s"),
            "naive_warm_over_sample_warm": _ratio(
                naive_result, "warm_rebuild_s", sample, "warm_rebuild_s"
            ),
            "naive_size_over_sample_size": _ratio(
                naive_result, "image_size_bytes", sample, "image_size_bytes"
            ),
            "naive_pushed_over_sample_pushed": _ratio(
                naive_result, "pushed_size_bytes", sample, "pushed_size_bytes"
            ),
            "naive_new_bytes_over_sample_new_bytes": _ratio(
                naive_result, "warm_new_layer_bytes", sample, "warm_new_layer_bytes"
            ),
        }
        summary = {
            "weights_bytes": WEIGHTS_BYTES,
            "deps_bytes": DEPS_BYTES,
            "load_average_1m": os.getloadavg()[0],
            **results,
            "ratios": ratios,
        }
        (WORK.parent / "build-summary.json").write_text(json.dumps(summary, indent=2))
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
