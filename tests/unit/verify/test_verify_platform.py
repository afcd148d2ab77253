"""verify judges the image a host would really run: the host's platform by default (from the
audit's machine), normalised as containerd does, and a failing check when there is none."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bed.oci import Platform, make_image, make_index, write_oci_layout
from gpuship import platforms
from gpuship.cli.main import main
from gpuship.compat.container import SystemReading
from unit.compat.compat_builders import audit, gpu

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64", "v8")
LABELS = {"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": "9.0"}


@pytest.mark.parametrize(
    ("given", "normal"),
    [  # containerd platforms.normalizeArch / normalizeOS
        ("linux/aarch64", "linux/arm64"),
        ("linux/arm64/v8", "linux/arm64"),
        ("linux/arm64/8", "linux/arm64"),
        ("linux/arm64/9.0", "linux/arm64/v9"),
        ("linux/x86_64", "linux/amd64"),
        ("linux/amd64/v1", "linux/amd64"),
        ("linux/amd64/v3", "linux/amd64/v3"),
        ("linux/armhf", "linux/arm/v7"),
        ("linux/arm", "linux/arm/v7"),
        ("linux/i386", "linux/386"),
        ("MacOS/ARM64", "darwin/arm64"),
    ],
)
def test_normalize(given: str, normal: str) -> None:
    assert platforms.normalize(given) == normal


def test_host_platform_and_matching() -> None:
    assert platforms.host_platform("aarch64") == "linux/arm64"
    assert platforms.host_platform("x86_64") == "linux/amd64"
    assert platforms.matches("linux/arm64/v8", "linux/arm64")
    assert platforms.matches("linux/amd64/v3", "linux/amd64")
    assert not platforms.matches("linux/amd64/v3", "linux/amd64/v2")
    assert not platforms.matches("linux/amd64", "linux/arm64")


def _verify(tmp_path: Path, artifact: object, machine: str, *extra: str) -> tuple[int, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    host = audit(550, [gpu(cc="9.0")])
    host = host.model_copy(update={"system": SystemReading(kernel="6.8", machine=machine)})
    (tmp_path / "audit.json").write_text(host.model_dump_json())
    layout = write_oci_layout(tmp_path / "image", artifact, tag="1")  # type: ignore[arg-type]
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "verify",
            f"oci:{layout}:1",
            "--audit",
            str(tmp_path / "audit.json"),
            "--format",
            "json",
            *extra,
        ],
        environ={},
        stdout=out,
        stderr=err,
    )
    if not out.getvalue():
        return code, err.getvalue()
    checks = json.loads(out.getvalue())["result"]["checks"]
    platform = [c for c in checks if c["rule"] == "GSV204"]
    return code, f"{platform[0]['subject']}: {platform[0]['message']}" if platform else ""


def test_arm64_host_without_an_arm64_variant_fails_naming_what_the_image_has(
    tmp_path: Path,
) -> None:
    index = make_index([make_image([{"a": b"1"}], labels=LABELS, platform=AMD64)])
    code, message = _verify(tmp_path, index, "aarch64")
    assert code == 1
    assert message == "image: image has no linux/arm64 variant (it has: linux/amd64)"


def test_arm64_host_takes_the_arm64_v8_entry(tmp_path: Path) -> None:
    images = [
        make_image([{"a": bytes([n])}], labels=LABELS, platform=p)
        for n, p in enumerate((AMD64, ARM64))
    ]
    _, message = _verify(tmp_path, make_index(images), "aarch64")
    assert message == "image: linux/arm64/v8 runs on linux/arm64"
    _, message = _verify(tmp_path / "x86", make_index(images), "x86_64")
    assert message == "image: linux/amd64 runs on linux/amd64"


def test_single_platform_image_of_another_architecture_fails(tmp_path: Path) -> None:
    image = make_image([{"a": b"1"}], labels=LABELS, platform=AMD64)
    code, message = _verify(tmp_path, image, "aarch64")
    assert (
        code == 1 and message == "image: image is linux/amd64; this host runs linux/arm64 (aarch64)"
    )
    code, message = _verify(tmp_path / "explicit", image, "aarch64", "--platform", "linux/amd64")
    assert code == 1 and "this host runs linux/arm64" in message  # asked for, still cannot run


def test_inspect_defaults_to_the_host_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = [
        make_image([{"a": bytes([n])}], labels=LABELS, platform=p)
        for n, p in enumerate((AMD64, ARM64))
    ]
    layout = write_oci_layout(tmp_path / "image", make_index(images), tag="1")
    uname = platforms.os.uname()
    fake = type(uname)((*uname[:4], "aarch64"))
    monkeypatch.setattr(platforms.os, "uname", lambda: fake)
    out = io.StringIO()
    main(["inspect", f"oci:{layout}:1", "--format", "json"], environ={}, stdout=out)
    assert json.loads(out.getvalue())["result"]["image"]["platform"] == "linux/arm64/v8"
