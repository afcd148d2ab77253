"""`inspect --compare`: two images assembled from known layers give exactly their differences.

The images are OCI layouts written by the test bed (bed.oci), read through gpuship's real OCI
layout source; the expected differences are stated here from the layer contents.
"""

from __future__ import annotations

from typing import Any

import pytest

from bed.oci import make_image, write_oci_layout
from gpuship.image import rules
from gpuship.image.compare import Judged
from gpuship.image.compare_report import compare_report
from gpuship.image.config import GrowthMax, ImageStageConfig
from gpuship.image.inspect import inspect_pair
from gpuship.image.report import judge
from gpuship.image.sources.oci_layout import OciLayoutSource
from gpuship.report.result import to_json

MIB = 1 << 20
SITE = "usr/lib/python3/dist-packages"
STATUS = "var/lib/dpkg/status"


def _dpkg(*packages: tuple[str, str]) -> bytes:
    paragraphs = [
        f"Package: {name}\nStatus: install ok installed\nArchitecture: amd64\n"
        f"Version: {version}\nDescription: test\n more words: with a colon\n"
        for name, version in packages
    ]
    paragraphs.append("Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n")
    return "\n".join(paragraphs).encode()


BASE = {
    "usr/local/cuda/lib64/libcublas.so.12.4.5.8": b"c" * 4096,
    "etc/os-release": b"ID=test\n",
}
REFERENCE_APP = {
    STATUS: _dpkg(("libc6", "2.35-0ubuntu3"), ("curl", "7.81.0-1")),
    f"{SITE}/requests-2.31.0.dist-info/METADATA": b"Name: requests\n",
    f"{SITE}/torch-2.3.1+cu121.dist-info/METADATA": b"Name: torch\n",
    "opt/conda/conda-meta/numpy-1.26.4-py311h64a7726_0.json": b"{}",
    "app/main.py": b"print('v1')\n",
    "app/data.bin": b"d" * 1000,
}
CANDIDATE_APP = {
    STATUS: _dpkg(("libc6", "2.35-0ubuntu3"), ("git", "1:2.34.1-1")),
    f"{SITE}/requests-2.32.3.dist-info/METADATA": b"Name: requests\n",
    f"{SITE}/Flask_Cors-4.0.1.dist-info/METADATA": b"Name: Flask-Cors\n",
    f"{SITE}/torch-2.4.0+cu124.dist-info/METADATA": b"Name: torch\n",
    "opt/conda/conda-meta/numpy-2.0.1-py311h1461d41_0.json": b"{}",
    "app/main.py": b"print('v1')\n",
    "app/data.bin": b"d" * 5000,
    "app/new.bin": b"n" * 3000,
}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Any, Any]:
    root = tmp_path_factory.mktemp("compare")
    history = [{"created_by": "COPY base /"}, {"created_by": "RUN install"}]
    reference = make_image([BASE, REFERENCE_APP], history=history)
    extra = {"created_by": "COPY cuda /"}
    candidate = make_image(
        [BASE, CANDIDATE_APP, {"usr/local/cuda/lib64/libcudnn.so.9.1.0": b"n" * 2000}],
        history=[*history, extra],
    )
    write_oci_layout(root / "reference", reference, tag="v1")
    write_oci_layout(root / "candidate", candidate, tag="v2")
    return f"oci:{root / 'candidate'}:v2", f"oci:{root / 'reference'}:v1", candidate, reference


def _report(layouts: tuple[str, str, Any, Any], config: ImageStageConfig) -> dict[str, Any]:
    new, old = inspect_pair(layouts[0], layouts[1], platform="linux/amd64", workers=2)
    candidate = Judged(new, judge(new, config, None))
    reference = Judged(old, judge(old, config, None))
    report = compare_report("inspect", candidate, reference, config)
    return {"report": report, "json": to_json(report.result)}


def test_sizes_layers_and_files(layouts: tuple[str, str, Any, Any]) -> None:
    result = _report(layouts, ImageStageConfig())["json"]
    assert result["shared_layers"] == 1
    assert result["size"]["uncompressed_delta"] == (
        sum(len(v) for v in CANDIDATE_APP.values())
        + 2000
        - sum(len(v) for v in REFERENCE_APP.values())
    )
    candidate, reference = layouts[2], layouts[3]
    assert result["size"]["compressed_delta"] == sum(len(b.data) for b in candidate.layers) - sum(
        len(b.data) for b in reference.layers
    )
    changes = [
        (row["change"], row["candidate_index"], row["reference_index"]) for row in result["layers"]
    ]
    assert changes == [("grown", 1, 1), ("added", 2, None)]
    files = {
        (row["path"], row["change"], row["candidate_size"], row["reference_size"])
        for row in result["files"]
    }
    assert files == {
        ("/app/data.bin", "grown", 5000, 1000),
        ("/app/new.bin", "added", 3000, 0),
        ("/usr/local/cuda/lib64/libcudnn.so.9.1.0", "added", 2000, 0),
        (f"/{SITE}/Flask_Cors-4.0.1.dist-info/METADATA", "added", 17, 0),
        (f"/{SITE}/requests-2.32.3.dist-info/METADATA", "added", 15, 0),
        (f"/{SITE}/torch-2.4.0+cu124.dist-info/METADATA", "added", 12, 0),
        ("/opt/conda/conda-meta/numpy-2.0.1-py311h1461d41_0.json", "added", 2, 0),
        (f"/{STATUS}", "grown", len(CANDIDATE_APP[STATUS]), len(REFERENCE_APP[STATUS])),
    }


def test_packages_cuda_and_torch(layouts: tuple[str, str, Any, Any]) -> None:
    result = _report(layouts, ImageStageConfig())["json"]
    packages = {
        (
            row["manager"],
            row["name"],
            row["change"],
            row["reference_version"],
            row["candidate_version"],
        )
        for row in result["packages"]
    }
    assert packages == {
        ("dpkg", "curl", "removed", "7.81.0-1", None),
        ("dpkg", "git", "added", None, "1:2.34.1-1"),
        ("pip", "requests", "changed", "2.31.0", "2.32.3"),
        ("pip", "flask-cors", "added", None, "4.0.1"),
        ("pip", "torch", "changed", "2.3.1+cu121", "2.4.0+cu124"),
        ("conda", "numpy", "changed", "1.26.4", "2.0.1"),
    }
    assert result["cuda_libraries"] == [
        {
            "library": "libcudnn",
            "location": "system",
            "change": "added",
            "candidate_versions": ["9.1.0"],
            "reference_versions": [],
        }
    ]
    assert result["reference_torch"] == {"version": "2.3.1+cu121", "variant": "cu121"}
    assert result["candidate_torch"] == {"version": "2.4.0+cu124", "variant": "cu124"}


def test_findings_new_fixed_unchanged(layouts: tuple[str, str, Any, Any]) -> None:
    result = _report(layouts, ImageStageConfig())["json"]
    changes = {(row["rule"], row["change"]) for row in result["findings"]}
    # Both images lack the required labels: unchanged, not fixed and new.
    assert (rules.LABEL_MISSING, "unchanged") in changes
    assert not any(change == "new" for _, change in changes)


@pytest.mark.parametrize(
    ("budget", "exceeded"),
    [
        (GrowthMax(mib=0.001), True),
        (GrowthMax(mib=1), False),
        (GrowthMax(percent=1), True),
        (GrowthMax(percent=1000), False),
        (GrowthMax(percent=1000, mib=0.001), True),
    ],
)
def test_growth_budget(
    layouts: tuple[str, str, Any, Any], budget: GrowthMax, exceeded: bool
) -> None:
    report = _report(layouts, ImageStageConfig(growth_max=budget))["report"]
    assert report.result.growth.exceeded is exceeded
    assert any(f.rule == rules.OVER_GROWTH for f in report.findings) is exceeded


def test_shared_layer_read_once(
    layouts: tuple[str, str, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str | None] = []
    real = OciLayoutSource.open_blob

    def counting(self: OciLayoutSource, blob: Any) -> Any:
        opened.append(blob.digest)
        return real(self, blob)

    monkeypatch.setattr(OciLayoutSource, "open_blob", counting)
    inspect_pair(layouts[0], layouts[1], platform="linux/amd64")
    candidate, reference = layouts[2], layouts[3]
    assert sorted(opened) == sorted({b.digest for b in (*candidate.layers, *reference.layers)})
    assert len(opened) == len(candidate.layers) + len(reference.layers) - 1


def test_markdown_lists_the_changes(layouts: tuple[str, str, Any, Any]) -> None:
    from gpuship.report.markdown import render_markdown

    text = render_markdown(_report(layouts, ImageStageConfig())["report"])
    assert "### Packages" in text
    assert "| pip | requests | changed | 2.31.0 | 2.32.3 |" in text
    assert "| added | 2 |  | 2.0 KiB | +2.0 KiB | COPY cuda / |" in text


def test_growth_flags_without_compare_are_a_usage_error(
    layouts: tuple[str, str, Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuship.cli.main import main

    assert main(["inspect", layouts[0], "--growth-max-mib", "1"]) == 2
    assert "need --compare REF" in capsys.readouterr().err
