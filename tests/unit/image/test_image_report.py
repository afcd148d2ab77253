"""Judging an analysed image: which rules fire, with which figures, at which Dockerfile line."""

from __future__ import annotations

from gpuship.image import rules
from gpuship.image.analysis import analyze
from gpuship.image.config import ImageStageConfig
from gpuship.image.fatbin import GpuCode
from gpuship.image.layerscan import Entry, GpuBinary, LayerScan, WeightFile
from gpuship.image.report import DockerfileLines, judge
from gpuship.image.source import BlobRef, ImageConfigDocument, ResolvedImage
from gpuship.image.tarwalk import REGULAR
from gpuship.report.result import to_json

MIB = 1 << 20
WHEEL = "usr/lib/python3.11/site-packages"


def _scan(index: int, files: dict[str, int], **extra: object) -> LayerScan:
    entries = tuple(Entry(path, REGULAR, size) for path, size in files.items())
    return LayerScan(
        index=index,
        digest=f"sha256:{index:064x}",
        diff_id=f"sha256:{index:064x}",
        compressed_size=sum(files.values()) // 2,
        uncompressed_size=sum(files.values()) + 1024,
        compression="gzip",
        entries=entries,
        weights=extra.get("weights", ()),  # type: ignore[arg-type]
        gpu_binaries=extra.get("gpu", ()),  # type: ignore[arg-type]
        texts=extra.get("texts", {}),  # type: ignore[arg-type]
    )


def _image(scans: list[LayerScan], env: dict[str, str], labels: dict[str, str]) -> ResolvedImage:
    config = ImageConfigDocument.model_validate(
        {
            "os": "linux",
            "architecture": "amd64",
            "config": {"Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels},
            "rootfs": {"diff_ids": [s.diff_id for s in scans]},
            "history": [
                {"created_by": "ENV A=1", "empty_layer": True},
                *({"created_by": f"RUN step {s.index}"} for s in scans),
            ],
        }
    )
    return ResolvedImage(
        source="test",
        reference="test",
        manifest_digest="sha256:" + "e" * 64,
        platforms=(),
        config=config,
        config_digest="sha256:" + "c" * 64,
        layers=tuple(BlobRef(s.digest, s.compressed_size, "x") for s in scans),
    )


def _fixture_image() -> tuple[ResolvedImage, list[LayerScan]]:
    version_py = f"{WHEEL}/torch/version.py"
    scans = [
        _scan(
            0,
            {
                "usr/local/cuda/lib64/libcublas.so.12.4.5.8": 300 * MIB,
                "var/lib/apt/lists/jammy_InRelease": 40 * MIB,
                "tmp/data.tar": 50 * MIB,
            },
        ),
        _scan(
            1,
            {
                f"{WHEEL}/nvidia/cublas/lib/libcublas.so.12": 400 * MIB,
                version_py: 100,
                "models/llm.safetensors": 1500 * MIB,
                "usr/lib/libops.so": 2 * MIB,
                "tmp/.wh.data.tar": 0,
            },
            weights=(WeightFile("models/llm.safetensors", "safetensors", 1500 * MIB),),
            gpu=(
                GpuBinary("usr/lib/libops.so", 2 * MIB, GpuCode(frozenset({"sm_80"}), frozenset())),
            ),
            texts={version_py: "cuda = '12.8'\n"},
        ),
    ]
    env = {"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}
    labels = {"org.opencontainers.image.source": "https://github.com/o/r"}
    return _image(scans, env, labels), scans


def test_rules_fire_with_their_figures() -> None:
    image, scans = _fixture_image()
    config = ImageStageConfig(targets=["sm_80", "sm_90"], size_budget_mib=1000)
    judgement = judge(analyze(image, scans), config)
    fired = sorted({f.rule for f in judgement.findings})
    assert fired == sorted(
        [
            rules.LABEL_MISSING,  # revision only
            rules.WEIGHTS,
            rules.PACKAGE_CACHE,
            rules.CUDA_CLAIM_WEAKER,
            rules.CUDA_DUPLICATED,
            rules.ARCH_MISSING,  # sm_90 not in libops.so
            rules.HIDDEN_FILES,  # 50 MiB deleted in layer 1 (dive efficiency stays ~0.98)
            rules.LAYER_OVERSIZED,  # layer 1 > 1 GiB
            rules.OVER_BUDGET,
        ]
    )
    messages = {f.rule: f.message for f in judgement.findings}
    assert "org.opencontainers.image.revision" in messages[rules.LABEL_MISSING]
    assert "needs CUDA 12.8" in messages[rules.CUDA_CLAIM_WEAKER]
    assert "sm_90" in messages[rules.ARCH_MISSING]
    assert "/tmp/data.tar (50.0 MiB)" in messages[rules.HIDDEN_FILES]
    result = to_json(judgement.result)
    assert result["cuda"]["effective"] == "12.8"
    assert result["waste"]["corrected_wasted_bytes"] == 50 * MIB
    assert result["layers"][1]["created_by"] == "RUN step 1"  # empty_layer entry skipped
    assert result["layers"][1]["top_files"][0] == {
        "path": "/models/llm.safetensors",
        "size": 1500 * MIB,
    }
    assert result["layers"][0]["top_dirs"][0] == {"path": "/usr/local", "size": 300 * MIB}
    assert result["size"]["uncompressed"] == (300 + 40 + 50 + 400 + 1500 + 2) * MIB + 100
    assert set(judgement.rules) == set(fired)


def test_thresholds_from_config_silence_rules() -> None:
    image, scans = _fixture_image()
    config = ImageStageConfig(
        oversized_layer_mib=4096,
        required_labels=[],
        waste_floor_mib=100,
        weights_min_mib=2000,
    )
    fired = {f.rule for f in judge(analyze(image, scans), config).findings}
    assert not fired & {
        rules.LAYER_OVERSIZED,
        rules.LABEL_MISSING,
        rules.HIDDEN_FILES,
        rules.INEFFICIENT,
        rules.WEIGHTS,
        rules.OVER_BUDGET,
        rules.ARCH_MISSING,
    }


def test_findings_point_at_the_dockerfile_line_of_their_layer() -> None:
    image, scans = _fixture_image()
    lines = DockerfileLines("Dockerfile", (4, 9))
    judgement = judge(analyze(image, scans), ImageStageConfig(), lines)
    weights = next(f for f in judgement.findings if f.rule == rules.WEIGHTS)
    assert weights.location is not None
    assert (weights.location.file, weights.location.line) == ("Dockerfile", 9)
    cache = next(f for f in judgement.findings if f.rule == rules.PACKAGE_CACHE)
    assert cache.location is not None and cache.location.line == 4


def test_dive_rules_use_dives_strict_comparisons_and_an_absolute_floor() -> None:
    # 40 MiB copied twice into user layers: dive counts 80 MiB wasted, efficiency 1/2.
    scans = [
        _scan(0, {"base/os": 100 * MIB}),
        _scan(1, {"data/blob": 40 * MIB}),
        _scan(2, {"data/blob": 40 * MIB}),
    ]
    image = _image(scans, {}, {})
    analysis = analyze(image, scans)
    assert analysis.dive.wasted_bytes == 80 * MIB
    assert analysis.filesystem.hidden_bytes == 40 * MIB

    def fired(**settings: object) -> bool:
        config = ImageStageConfig.model_validate({"required-labels": [], **settings})
        return any(f.rule == rules.INEFFICIENT for f in judge(analysis, config).findings)

    efficiency = analysis.dive.efficiency  # (100 + 40) / (100 + 80)
    assert efficiency == 140 / 180
    assert fired()  # user wasted 80 / 80 = 1.0 > 0.1
    assert not fired(**{"highest-user-wasted-percent": 1.0, "lowest-efficiency": efficiency})
    assert fired(**{"highest-user-wasted-percent": 1.0, "lowest-efficiency": 0.8})
    assert fired(
        **{"highest-user-wasted-percent": 1.0, "lowest-efficiency": 0, "highest-wasted-mib": 79}
    )
    assert not fired(**{"waste-floor-mib": 41})  # corrected waste 40 MiB is under the floor


def test_sharded_weights_are_one_finding_and_hub_caches_are_not_repeated() -> None:
    shards = {f"models/llm/model-0000{n}-of-00003.safetensors": 500 * MIB for n in (1, 2, 3)}
    hub = "root/.cache/huggingface/hub/models--bert/blobs/0123abcd"
    scans = [
        _scan(
            0,
            {**shards, hub: 400 * MIB},
            weights=tuple(
                WeightFile(path, "safetensors", size)
                for path, size in {**shards, hub: 400 * MIB}.items()
            ),
        )
    ]
    judgement = judge(analyze(_image(scans, {}, {}), scans), ImageStageConfig(required_labels=[]))
    weights = [f.message for f in judgement.findings if f.rule == rules.WEIGHTS]
    assert weights == [
        "3 weight files (safetensors, 1.5 GiB) in /models/llm in layer 0; "
        "largest /models/llm/model-00003-of-00003.safetensors (500.0 MiB)"
    ]
    hub_findings = [f.message for f in judgement.findings if f.rule == rules.HUB_CACHE]
    assert len(hub_findings) == 1 and "huggingface" in hub_findings[0]
    assert len(judgement.result.weights) == 4  # the result still lists every file


def test_driver_libraries_are_an_error_at_their_layer_but_stubs_and_compat_are_not() -> None:
    """Issue #33: libnvidia-compute-550's files in layer 1; the toolkit's stubs, cuda-compat's
    libraries, conda-forge's cuda-compat and an empty leftover of a build under the NVIDIA
    runtime in layer 0 are not driver libraries."""
    lib = "usr/lib/x86_64-linux-gnu"
    base = _scan(
        0,
        {
            "usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/libcuda.so": 60_000,
            "usr/local/cuda-12.4/compat/libcuda.so.550.54.15": 30 * MIB,
            "usr/local/cuda-12.4/compat/libnvidia-ptxjitcompiler.so.550.54.15": 20 * MIB,
            "opt/conda/cuda-compat/libcuda.so.550.54.15": 30 * MIB,
            f"{lib}/libnvidia-ml.so.535.161.08": 0,
        },
    )
    driver = _scan(
        1,
        {
            f"{lib}/libcuda.so.550.54.15": 30 * MIB,
            f"{lib}/libnvidia-ml.so.550.54.15": 2 * MIB,
            f"{lib}/libnvidia-ptxjitcompiler.so.550.54.15": 20 * MIB,
            f"{lib}/libnvidia-nvvm.so.550.54.15": 40 * MIB,
            f"{lib}/libcudart.so.12.4.127": MIB,
        },
    )
    scans = [base, driver]
    judgement = judge(
        analyze(_image(scans, {}, {}), scans),
        ImageStageConfig(required_labels=[]),
        DockerfileLines("Dockerfile", (2, 5)),
    )
    found = [f for f in judgement.findings if f.rule == rules.DRIVER_LIBRARIES]
    assert [(f.severity.value, f.location.line if f.location else None) for f in found] == [
        ("error", 5)
    ]
    assert found[0].message.startswith(
        f"NVIDIA driver 550.54.15 user-space libraries in layer 1: /{lib}/libcuda.so.550.54.15, "
        f"/{lib}/libnvidia-ml.so.550.54.15, /{lib}/libnvidia-nvvm.so.550.54.15 and 1 more."
    )
    assert rules.DRIVER_LIBRARIES in judgement.rules


def test_driver_libraries_a_later_layer_deletes_are_not_in_the_image() -> None:
    lib = "usr/lib/x86_64-linux-gnu"
    scans = [
        _scan(0, {f"{lib}/libcuda.so.550.54.15": 30 * MIB}),
        _scan(1, {f"{lib}/.wh.libcuda.so.550.54.15": 0}),
    ]
    judgement = judge(analyze(_image(scans, {}, {}), scans), ImageStageConfig(required_labels=[]))
    assert rules.DRIVER_LIBRARIES not in {f.rule for f in judgement.findings}
