"""Fuzz targets: each takes the fuzzer's bytes and drives one public entry of gpuship.

The contract under test is the project's: an input can only end in a result or in the typed
error the entry documents (`GpushipError` subclasses, `LayerError`, `FatbinError`). Anything
else escaping (IndexError, RecursionError, UnicodeError, a ValueError from int()) is a bug, and
the fuzzer reports it with the input. The runners (`run.py`, atheris) add per-input time and
memory bounds, so a hang or a blow-up is a finding too.

Limits are tightened so each input runs in milliseconds: the limit paths get exercised, and
the fuzzer spends its time on structure, not on size.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import shutil
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import zstandard

from gpuship.cli.config_catalog import load_config
from gpuship.cuda.require import GpuDevice, HostFacts, evaluate_requirements, validate_expression
from gpuship.documents import load_json
from gpuship.errors import GpushipError
from gpuship.image.fatbin import FatbinError, gpu_code_of_elf, parse_fatbin
from gpuship.image.layerscan import LayerError, scan_layer
from gpuship.image.source import check_image_config, layer_blobs, parse_config
from gpuship.limits import DEFAULT_LIMITS
from gpuship.lint.dockerignore import IgnoreRules
from gpuship.lint.engine import lint_file, rule_policy
from gpuship.lint.settings import LintSettings
from gpuship.registry.manifest import MANIFEST_MEDIA_TYPES, ImageManifest, parse_manifest

LIMITS = DEFAULT_LIMITS.override(
    json_max_items=5_000,
    yaml_max_bytes=64 * 1024,
    yaml_max_nodes=5_000,
    layer_max_bytes=8 << 20,
    layer_ratio_after_bytes=1 << 20,
    layer_max_entries=2_000,
    image_max_entries=2_000,
    tar_header_max_bytes=64 * 1024,
    expansion_max_bytes=16 * 1024,
    script_max_bytes=16 * 1024,
    run_max_commands=500,
    dockerignore_max_patterns=200,
)
_SETTINGS = LintSettings()
_POLICY = rule_policy(_SETTINGS)


@functools.cache
def _scratch() -> Path:
    """A private directory for the files targets write, removed when the process ends."""
    path = Path(tempfile.mkdtemp(prefix="gpuship-fuzz-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def _context() -> Path:
    """A small build context the fuzzed Dockerfile can COPY from and RUN scripts of."""
    context = _scratch() / "context"
    (context / "src").mkdir(parents=True)
    (context / "requirements.txt").write_text("torch==2.5.1\nnumpy>=1.26\n")
    (context / "install.sh").write_text("set -e\npip install transformers\nexport A=1\n")
    (context / ".dockerignore").write_text("**/*.pyc\n!keep.pyc\n[a-c]*.tmp\n")
    (context / "src" / "app.py").write_text("print('hi')\n")
    (context / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    return context


def lint(data: bytes) -> None:
    """Arbitrary Dockerfile bytes through lint's public entry (parse, stages, every rule)."""
    context = _context()
    path = context / "Dockerfile"
    path.write_bytes(data)
    with contextlib.suppress(GpushipError):
        lint_file(
            path,
            display="Dockerfile",
            context_dir=context,
            build_args={"BASE": "python:3.12"},
            target=None,
            config=_SETTINGS,
            policy=_POLICY,
            limits=LIMITS,
        )


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def require(data: bytes) -> None:
    """`NVIDIA_REQUIRE_*` values and host facts, evaluated as nvidia-container-cli does."""
    parts = _text(data).split("\x00")
    env = {"NVIDIA_REQUIRE_CUDA": parts[0]}
    for index, value in enumerate(parts[1:4]):
        env[("NVIDIA_REQUIRE_X", "CUDA_VERSION", "NVIDIA_DISABLE_REQUIRE")[index]] = value
    facts = ([*parts[4:7], "", "", ""])[:3]
    gpus = tuple(
        GpuDevice(brand or None, arch)
        for brand, arch in zip(parts[7::2], parts[8::2], strict=False)
    )
    host = HostFacts(facts[0] or None, facts[1] or None, gpus[:4])
    with contextlib.suppress(GpushipError):
        evaluate_requirements(env, host)
    with contextlib.suppress(GpushipError):
        validate_expression(parts[0])


def layer(data: bytes) -> None:
    """A layer blob: the first byte chooses raw, gzip or zstd around the rest (a tar)."""
    if not data:
        return
    mode, body = data[0] % 4, data[1:]
    if mode == 1:
        compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
        body = compressor.compress(body) + compressor.flush()
    elif mode == 2:
        body = zstandard.ZstdCompressor(level=1).compress(body)
    with contextlib.suppress(LayerError):
        scan_layer(
            io.BytesIO(body),
            index=0,
            digest=None,
            size=None,
            tmpdir=_scratch(),
            limits=LIMITS,
        )


def fatbin(data: bytes) -> None:
    """An ELF shared object (its `.nv_fatbin`), and the bytes as a bare fatbin container."""
    with contextlib.suppress(FatbinError):
        gpu_code_of_elf(io.BytesIO(data))
    with contextlib.suppress(FatbinError):
        parse_fatbin(io.BytesIO(data), 0, len(data))


def manifest(data: bytes) -> None:
    """Manifest, index and config documents, served with any of the manifest media types."""
    if not data:
        return
    media_type = MANIFEST_MEDIA_TYPES[data[0] % len(MANIFEST_MEDIA_TYPES)]
    body = data[1:]
    try:
        document = parse_manifest(body, media_type, LIMITS, "fuzz")
        if isinstance(document, ImageManifest):
            check_image_config(document, "fuzz")
            layer_blobs(document.layers, "fuzz")
    except GpushipError:
        pass
    with contextlib.suppress(GpushipError):
        parse_config(body, "fuzz", LIMITS)
    with contextlib.suppress(GpushipError):
        load_json(body, "fuzz", LIMITS)


def dockerignore(data: bytes) -> None:
    """Ignore-file text and a path (after the first NUL); parsing and matching never raise."""
    text, _, path = _text(data).partition("\x00")
    rules = IgnoreRules.parse(text, ".dockerignore", LIMITS.dockerignore_max_patterns)
    for candidate in (path, path.strip("/") or "a", "src/app.py"):
        rules.excluded(candidate)


def config(data: bytes) -> None:
    """`gpuship.yaml` bytes through the config loader (YAML, limits, validation)."""
    path = _scratch() / "gpuship.yaml"
    path.write_bytes(data)
    environ = {
        "GPUSHIP_LIMITS__YAML_MAX_BYTES": str(LIMITS.yaml_max_bytes),
        "GPUSHIP_LIMITS__YAML_MAX_NODES": str(LIMITS.yaml_max_nodes),
    }
    with contextlib.suppress(GpushipError):
        load_config(path, environ)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "lint": lint,
    "require": require,
    "layer": layer,
    "fatbin": fatbin,
    "manifest": manifest,
    "dockerignore": dockerignore,
    "config": config,
}
