"""`inspect` reads an image's `io.gpuship.*` needs labels as `verify` does (issue #28).

Both commands run on the same OCI layouts, one per label set of the table: a malformed label
is the same input error (exit 2, naming the image and the label) in both, and a well-formed
arch list is what verify judges and what inspect checks against the image's GPU library.
The library is a real one from nvcc (SASS sm_75, sm_80, sm_90; PTX compute_90), so `7.0`
is a promise it breaks and `8.0`, `9.0` are promises it keeps.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bed.oci import make_image, write_oci_layout
from gpuship.cli.main import main
from gpuship.cuda.arch import parse_arch_list
from gpuship.image.coverage import sm_targets
from gpuship.image.needs import labels_lack_needs

AUDIT = Path(__file__).resolve().parents[2] / "data/gpu-readings/NVIDIA-H200-580.159.04.audit.json"
ARCH = "io.gpuship.arch-list"
CUDA = "io.gpuship.cuda"
DRIVER = "io.gpuship.min-driver"


@dataclass(frozen=True)
class Read:
    """A well-formed label set: the GPUs it promises, and those the library has no kernel for."""

    promised: tuple[str, ...]
    unsupported: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refused:
    """A malformed label: both commands stop with this error after the image's name."""

    error: str


def refused(label: str, value: str, what: str, token: str | None = None) -> Refused:
    return Refused(f"label {label}={value!r}: invalid {what} '{token or value}'")


TABLE: list[tuple[str, dict[str, str], Read | Refused]] = [
    ("none", {}, Read(())),
    ("kept", {CUDA: "12.4", ARCH: "8.0;9.0", DRIVER: "550.54.15"}, Read(("sm_80", "sm_90"))),
    ("broken", {CUDA: "12.4", ARCH: "7.0;8.0"}, Read(("sm_70", "sm_80"), ("sm_70",))),
    ("spaces-ptx", {ARCH: "6.1 7.0+PTX"}, Read(("sm_61", "sm_70"), ("sm_61", "sm_70"))),
    ("nvcc-names", {ARCH: "sm_90a,compute_90"}, Read(("sm_90",))),
    ("empty", {CUDA: "", ARCH: "", DRIVER: ""}, Read(())),
    ("blank-arch", {ARCH: " "}, Read(())),
    ("arch-word", {ARCH: "ampere"}, refused(ARCH, "ampere", "arch target")),
    ("arch-part", {CUDA: "12.4", ARCH: "8.0;foo"}, refused(ARCH, "8.0;foo", "arch target", "foo")),
    ("cuda-word", {CUDA: "twelve", ARCH: "9.0"}, refused(CUDA, "twelve", "CUDA version")),
    ("cuda-x", {CUDA: "12.x"}, refused(CUDA, "12.x", "CUDA version")),
    # A known CUDA: verify never needed the min-driver label, and still refuses it malformed.
    ("driver-word", {CUDA: "12.4", DRIVER: "abc"}, refused(DRIVER, "abc", "driver version")),
    ("driver-x", {CUDA: "99.1", DRIVER: "550.x"}, refused(DRIVER, "550.x", "driver version")),
]


@pytest.fixture(scope="module")
def library_layer(nvcc_library: Path) -> dict[str, bytes]:
    return {"usr/lib/libscale.so": nvcc_library.read_bytes()}


def _run(args: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*args, "--format", "json"], environ={}, stdout=out, stderr=err)
    lines = err.getvalue().strip().splitlines()
    return code, json.loads(out.getvalue()) if out.getvalue() else None, lines[-1] if lines else ""


@pytest.mark.parametrize(("name", "labels", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_verify_and_inspect_read_the_labels_alike(
    tmp_path: Path,
    library_layer: dict[str, bytes],
    name: str,
    labels: dict[str, str],
    expected: Read | Refused,
) -> None:
    image = make_image([library_layer], labels=labels)
    reference = f"oci:{write_oci_layout(tmp_path / name, image, tag='1')}:1"
    verified = _run(["verify", reference, "--audit", str(AUDIT)])
    inspected = _run(["inspect", reference])
    if isinstance(expected, Refused):
        message = f"gpuship: error: {reference}: {expected.error}"
        assert (verified[0], verified[2]) == (2, message)
        assert (inspected[0], inspected[2]) == (2, message)
        return
    assert verified[0] != 2 and verified[1] is not None, verified[2]
    assert inspected[0] != 2 and inspected[1] is not None, inspected[2]
    arch_list = verified[1]["result"]["image"]["arch_list"]
    assert sm_targets(parse_arch_list(arch_list or ())) == expected.promised
    broken = tuple(
        finding["message"].split(" promises ")[1].split()[0]
        for finding in inspected[1]["findings"]
        if finding["rule"] == "GSI504"
    )
    assert broken == expected.unsupported
    claims = {(c["source"], c["value"]) for c in inspected[1]["result"]["cuda"]["claims"]}
    image_needs = verified[1]["result"]["image"]
    for label, key in ((CUDA, "cuda"), (DRIVER, "min_driver")):
        assert image_needs[key] == (labels.get(label) or None)
        assert not labels.get(label) or (label, labels[label]) in claims


@pytest.mark.parametrize(
    ("labels", "lack"),
    [
        ({CUDA: "12.4", ARCH: "9.0"}, False),
        ({CUDA: "", ARCH: "9.0"}, True),  # an empty label states nothing, as compat.needs says
        ({CUDA: "12.4", ARCH: ""}, True),
        ({ARCH: "9.0"}, True),
    ],
)
def test_deep_reads_layers_when_labelled_needs_lacks_the_cuda_or_the_arch_list(
    labels: dict[str, str], lack: bool
) -> None:
    assert labels_lack_needs("registry.example/app:1", labels) is lack
