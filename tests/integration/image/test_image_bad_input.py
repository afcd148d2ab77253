"""Hostile or broken images: each is one clear error or finding, never a hang or a traceback."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from bed.oci import Blob, Platform, make_image, make_index, push, write_oci_layout
from bed.registry import Registry
from gpuship.errors import InputError
from gpuship.image import rules
from gpuship.image.config import ImageStageConfig
from gpuship.image.inspect import inspect_image
from gpuship.image.report import judge

pytestmark = pytest.mark.integration

FILES = {"app/data.bin": bytes(range(256)) * 4096, "app/readme": b"hello\n"}


def _rewrite_layer(image: Any, blob: bytes, declared_size: int | None = None) -> Any:
    """The image with layer 0 replaced by `blob` (manifest re-written, size as declared)."""
    layer = Blob(image.layers[0].media_type, blob)
    manifest = json.loads(image.manifest.data)
    manifest["layers"][0] = {
        "mediaType": layer.media_type,
        "digest": layer.digest,
        "size": len(blob) if declared_size is None else declared_size,
    }
    data = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    return dataclasses.replace(
        image, manifest=Blob(image.manifest.media_type, data), layers=(layer,)
    )


def _inspect_layout(tmp_path: Path, image: Any) -> Any:
    layout = write_oci_layout(tmp_path / "layout", image)
    return inspect_image(f"oci:{layout}", platform="linux/amd64")


def test_blob_not_matching_its_digest_is_refused(tmp_path: Path) -> None:
    image = make_image([FILES])
    layout = write_oci_layout(tmp_path / "layout", image)
    blob_path = layout / "blobs" / "sha256" / image.layers[0].digest.removeprefix("sha256:")
    data = bytearray(blob_path.read_bytes())
    data[4] ^= 0x01  # the gzip header's mtime: still decompresses, but the digest changes
    blob_path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="does not match digest"):
        inspect_image(f"oci:{layout}", platform="linux/amd64")


def test_manifest_lying_about_layer_size_is_refused(tmp_path: Path) -> None:
    image = make_image([FILES])
    real = image.layers[0].data
    with pytest.raises(InputError, match="larger than the"):
        _inspect_layout(tmp_path / "small", _rewrite_layer(image, real, len(real) - 100))
    with pytest.raises(InputError, match="manifest declares"):
        _inspect_layout(tmp_path / "big", _rewrite_layer(image, real, len(real) + 100))


def test_truncated_gzip_with_a_matching_digest_is_refused(tmp_path: Path) -> None:
    image = make_image([FILES])
    truncated = image.layers[0].data[: len(image.layers[0].data) // 2]
    with pytest.raises(InputError, match="corrupt or truncated"):
        _inspect_layout(tmp_path, _rewrite_layer(image, truncated))


def test_layer_content_not_matching_config_diff_id_is_refused(tmp_path: Path) -> None:
    image = make_image([FILES])
    other = make_image([{"app/other": b"x"}])
    with pytest.raises(InputError, match="config says"):
        _inspect_layout(tmp_path, _rewrite_layer(image, other.layers[0].data))


def _hostile_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, link in [
            ("../../etc/cron.d/evil", tarfile.REGTYPE, ""),
            ("/abs/file", tarfile.REGTYPE, ""),
            ("a", tarfile.LNKTYPE, "b"),
            ("b", tarfile.LNKTYPE, "a"),
        ]:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = 4 if kind == tarfile.REGTYPE else 0
            archive.addfile(info, io.BytesIO(b"evil") if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def test_unsafe_paths_and_link_loops_are_findings_and_nothing_is_written(tmp_path: Path) -> None:
    image = make_image([_hostile_tar()])
    before = set(Path("/etc/cron.d").iterdir()) if Path("/etc/cron.d").exists() else set()
    analysis = _inspect_layout(tmp_path, image)
    findings = [
        f for f in judge(analysis, ImageStageConfig()).findings if f.rule == rules.UNSAFE_ENTRY
    ]
    messages = " | ".join(f.message for f in findings)
    assert len(findings) == 3
    assert "escapes the image root" in messages
    assert "absolute path" in messages
    assert "hard link to 'b'" in messages
    after = set(Path("/etc/cron.d").iterdir()) if Path("/etc/cron.d").exists() else set()
    assert after == before
    assert not Path("/abs/file").exists()


def test_huge_pax_header_leaves_the_layer_unchecked(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("f")
        info.pax_headers = {"comment": "x" * (2 << 20)}
        archive.addfile(info, io.BytesIO(b""))
    analysis = _inspect_layout(tmp_path, make_image([buffer.getvalue()]))
    findings = judge(analysis, ImageStageConfig()).findings
    unchecked = [f for f in findings if f.rule == rules.LAYER_UNCHECKED]
    assert len(unchecked) == 1
    assert "limits.tar-header-max-bytes" in unchecked[0].message
    assert analysis.layers[0].files == 0


def test_platform_selection_and_no_matching_platform(registry: Registry) -> None:
    amd = make_image([{"arch": b"amd64"}], platform=Platform(architecture="amd64"))
    arm = make_image([{"arch": b"arm64-v8"}], platform=Platform(architecture="arm64", variant="v8"))
    push(registry.url, "image/multi", make_index([amd, arm]), tag="v1")
    reference = registry.ref("image/multi", "v1")
    picked = inspect_image(reference, platform="linux/arm64")
    assert picked.image.manifest_digest == arm.digest
    assert picked.image.platforms == ("linux/amd64", "linux/arm64/v8")
    assert inspect_image(reference, platform="linux/amd64").image.manifest_digest == amd.digest
    with pytest.raises(InputError, match=r"no image for platform linux/s390x .*linux/amd64"):
        inspect_image(reference, platform="linux/s390x")


def test_cli_reports_bad_input_in_one_line_with_exit_2(tmp_path: Path) -> None:
    image = make_image([FILES])
    truncated = image.layers[0].data[:200]
    layout = write_oci_layout(tmp_path / "layout", _rewrite_layer(image, truncated))
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "inspect", f"oci:{layout}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "corrupt or truncated" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_json_output_for_a_registry_image(registry: Registry, tmp_path: Path) -> None:
    image = make_image(
        [FILES],
        labels={"org.opencontainers.image.source": "s", "org.opencontainers.image.revision": "r"},
    )
    push(registry.url, "image/cli", image, tag="v1")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuship",
            "--format",
            "json",
            "inspect",
            registry.ref("image/cli", "v1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    result = document["result"]
    assert result["image"]["manifest_digest"] == image.digest
    assert result["size"]["uncompressed"] == sum(len(v) for v in FILES.values())
    assert result["size"]["compressed"] == len(image.layers[0].data)


def test_cli_flags_override_the_config(tmp_path: Path) -> None:
    image = make_image([FILES], history=[{"created_by": "COPY app /app # buildkit"}])
    layout = write_oci_layout(tmp_path / "layout", image, tag="v1")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM scratch\n\nCOPY app /app\n")
    (tmp_path / "gpuship.yaml").write_text("inspect:\n  required-labels: []\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuship",
            "--format",
            "json",
            "inspect",
            f"oci:{layout}:v1",
            "--size-budget-mib",
            "1",
            "--dockerfile",
            str(dockerfile),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr  # the size budget is an error
    document = json.loads(done.stdout)
    over = [f for f in document["findings"] if f["rule"] == rules.OVER_BUDGET]
    assert len(over) == 1
    assert (over[0]["file"], over[0]["line"]) == (str(dockerfile), None)  # image-wide
    assert document["result"]["layers"][0]["dockerfile_line"] == 3
    assert not [f for f in document["findings"] if f["rule"] == rules.LABEL_MISSING]
