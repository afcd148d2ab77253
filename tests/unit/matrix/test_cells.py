"""Planning cells: values, needs from the knowledge base, pins, labels, errors."""

from __future__ import annotations

from typing import Any

import pytest

from gpuship import labels as L
from gpuship.cuda.arch import CoverageKind, kernel_coverage, parse_arch_list
from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.toolkits import compilable_targets
from gpuship.cuda.torch import torch_variant
from gpuship.errors import ConfigError
from gpuship.matrix.cells import SourceFacts, base_references, plan_image
from gpuship.matrix.config import ImageConfig
from gpuship.matrix.needs import torch_arch_list

DIGEST = "sha256:" + "ab" * 32


def image(**fields: Any) -> ImageConfig:
    data: dict[str, Any] = {"name": "train", "repository": "127.0.0.1:5000/acme/train"}
    data.update(fields)
    return ImageConfig.model_validate(data)


def test_labels_come_from_the_knowledge_base() -> None:
    config = image(role="training", axes={"cuda": ["12.6"], "torch": ["2.6.0"]})
    plan = plan_image(config, (), {}, SourceFacts("https://github.com/acme/app", "c0ffee"))
    (cell,) = plan.cells
    variant = torch_variant("2.6.0", "12.6")
    assert cell.labels[L.LABEL_MIN_DRIVER] == str(min_driver_for("12.6"))
    assert cell.labels[L.LABEL_ARCH_LIST] == variant.arch_list_text
    assert cell.labels[L.LABEL_CUDA] == "12.6"
    assert cell.labels[L.LABEL_TORCH] == "2.6.0"
    assert cell.labels[L.LABEL_ROLE] == "training"
    assert cell.labels[L.OCI_SOURCE] == "https://github.com/acme/app"
    assert cell.labels[L.OCI_REVISION] == "c0ffee"
    assert cell.labels[L.LABEL_CONFIG_DIGEST].startswith("sha256:")
    assert cell.needs.torch_variant == variant.name


def test_targets_give_the_arch_list_and_are_checked() -> None:
    targets = parse_arch_list(["sm_80", "sm_90"])
    plan = plan_image(image(axes={"cuda": ["12.4", "13.0"]}), targets, {})
    assert [c.needs.arch_list for c in plan.cells] == [torch_arch_list(targets)] * 2
    old = parse_arch_list(["sm_70"])
    plan = plan_image(image(axes={"cuda": ["12.4", "13.0"]}), old, {})
    assert [c.id for c in plan.cells] == ["train-cuda12.4"]
    (invalid,) = plan.invalid
    assert invalid.cell_id == "train-cuda13.0"
    assert "cannot compile sm_70" in invalid.reason


def test_torch_without_that_cuda_variant_is_invalid() -> None:
    plan = plan_image(image(axes={"cuda": ["12.4"], "torch": ["2.7.0"]}), (), {})
    assert not plan.cells
    assert "torch 2.7.0 publishes no CUDA 12.4 wheel" in plan.invalid[0].reason


def test_target_the_torch_wheel_has_no_kernels_for_is_invalid() -> None:
    # A target CUDA 12.6 compiles but torch 2.7.0+cu126 ships no kernel for (from the KB).
    variant = torch_variant("2.7.0", "12.6")
    assert variant.arch_list
    uncovered = [
        cc
        for cc in compilable_targets("12.6")
        if kernel_coverage(cc, variant.arch_list).kind is CoverageKind.NONE
    ]
    assert uncovered
    plan = plan_image(
        image(axes={"cuda": ["12.6"], "torch": ["2.7.0"]}), parse_arch_list([uncovered[0].sm]), {}
    )
    assert not plan.cells
    assert f"has no kernels for {uncovered[0].sm}" in plan.invalid[0].reason


def test_unknown_cuda_needs_allow_unknown() -> None:
    plan = plan_image(image(axes={"cuda": ["99.1"]}), (), {})
    assert "not in the knowledge base" in plan.invalid[0].reason
    plan = plan_image(image(axes={"cuda": ["99.1"]}, allow_unknown=True), (), {})
    (cell,) = plan.cells
    assert L.LABEL_MIN_DRIVER not in cell.labels
    assert cell.labels[L.LABEL_CUDA] == "99.1"
    assert plan.notes and "99.1" in plan.notes[0]


def test_templates_render_args_tags_and_builtins() -> None:
    config = image(
        axes={"cuda": ["12.6"], "python": ["3.11"]},
        include=[{"torch": "2.6.0"}],
        build_args={"PY": "{python}", "INDEX": "{torch_index_url}", "ARCH": "{arch_list}"},
        tags=["cu{cuda|nodot}-py{python}"],
    )
    (cell,) = plan_image(config, (), {}).cells
    variant = torch_variant("2.6.0", "12.6")
    assert cell.build_args == {
        "PY": "3.11",
        "INDEX": variant.index_url,
        "ARCH": variant.arch_list_text,
    }
    assert cell.tags == ("127.0.0.1:5000/acme/train:cu126-py3.11",)
    entry = cell.to_json()
    assert entry["python"] == "3.11" and entry["vars"]["torch"] == "2.6.0"
    # The cache lives in its own repository, one tag per cell; never in the release repository.
    assert entry["cache_from"] == (
        "type=registry,ref=127.0.0.1:5000/acme/train-buildcache:train-cuda12.6-python3.11"
    )
    assert entry["cache_to"] == (
        "type=registry,ref=127.0.0.1:5000/acme/train-buildcache:train-cuda12.6-python3.11,"
        "mode=max,image-manifest=true,oci-mediatypes=true,ignore-error=true"
    )


@pytest.mark.parametrize(
    ("cache", "cache_from", "cache_to"),
    [
        (
            {"repository": "127.0.0.1:5000/caches/train", "mode": "min"},
            "type=registry,ref=127.0.0.1:5000/caches/train:train-cuda12.6",
            "type=registry,ref=127.0.0.1:5000/caches/train:train-cuda12.6,mode=min,"
            "image-manifest=true,oci-mediatypes=true,ignore-error=true",
        ),
        (
            {"backend": "gha"},
            "type=gha,scope=train-cuda12.6",
            "type=gha,scope=train-cuda12.6,mode=max,ignore-error=true",
        ),
        ({"backend": "none"}, None, None),
    ],
)
def test_cache_backend_choice(
    cache: dict[str, str], cache_from: str | None, cache_to: str | None
) -> None:
    (cell,) = plan_image(image(axes={"cuda": ["12.6"]}, cache=cache), (), {}).cells
    entry = cell.to_json()
    assert (entry["cache_from"], entry["cache_to"]) == (cache_from, cache_to)


def test_base_image_is_pinned_from_the_lock() -> None:
    config = image(axes={"cuda": ["12.6"]}, base_image="127.0.0.1:5000/base/cuda:{cuda}-runtime")
    assert base_references(config, ()) == ["127.0.0.1:5000/base/cuda:12.6-runtime"]
    lock = {"127.0.0.1:5000/base/cuda:12.6-runtime": DIGEST}
    (cell,) = plan_image(config, (), lock).cells
    pinned = f"127.0.0.1:5000/base/cuda:12.6-runtime@{DIGEST}"
    assert cell.base_image == pinned
    assert cell.build_args["BASE_IMAGE"] == pinned
    assert cell.labels[L.OCI_BASE_DIGEST] == DIGEST
    plan = plan_image(config, (), {})
    assert "is not in gpuship.lock" in plan.invalid[0].reason


def test_config_digest_changes_with_the_config_only() -> None:
    first = plan_image(image(axes={"cuda": ["12.6"]}), (), {}).cells[0]
    again = plan_image(image(axes={"cuda": ["12.6"]}), (), {}).cells[0]
    other = plan_image(image(axes={"cuda": ["12.6"]}, target="runtime"), (), {}).cells[0]
    assert first.config_digest == again.config_digest != other.config_digest


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tags": ["{cudaa}"]}, "images[train].tags[0]: unknown axis 'cudaa' in template"),
        ({"build_args": {"X": "{nope}"}}, "images[train].build-args.X: unknown axis 'nope'"),
        ({"axes": {"id": ["1"]}}, "'id' is a reserved cell key"),
        (
            {"include": [{"a": "{b}", "b": "{a}"}]},
            "images[train].include: values refer to each other in a cycle",
        ),
        (
            {"base_image": "x:{cuda}", "build_args": {"BASE_IMAGE": "y"}},
            "BASE_IMAGE is set from base-image",
        ),
        ({"cell_id": "same"}, "two different cells get the id 'same'"),
        ({"exclude": [{"python": "3"}]}, "exclude[0] key 'python' is not an axis"),
    ],
)
def test_config_mistakes_name_the_image_and_field(fields: dict[str, Any], message: str) -> None:
    fields.setdefault("axes", {"cuda": ["12.4", "12.6"]})
    with pytest.raises(ConfigError) as caught:
        plan_image(image(**fields), (), {})
    assert message in str(caught.value)


def test_yaml_floats_are_refused_with_a_hint() -> None:
    with pytest.raises(ValueError, match="quote versions"):
        image(axes={"python": [3.1]})


def test_long_ids_are_shortened_for_tags() -> None:
    (cell,) = plan_image(image(axes={"flavour": ["x" * 200]}), (), {}).cells
    assert len(cell.id) <= 80
    assert len(f"sha-1234567-{cell.id}") <= 128


def test_cells_an_include_creates_are_told_apart_by_all_their_values() -> None:
    config = image(
        axes={"cuda": ["12.6"]},
        include=[{"cuda": "12.8", "torch": "2.7.0"}, {"cuda": "12.8", "torch": "2.8.0"}],
    )
    plan = plan_image(config, (), {})
    assert [c.id for c in plan.cells] == [
        "train-cuda12.6",
        "train-cuda12.8-torch2.7.0",
        "train-cuda12.8-torch2.8.0",
    ]


def test_a_cpu_cell_carries_no_cuda_labels() -> None:
    plan = plan_image(image(axes={"cuda": ["cpu", "12.6"]}), parse_arch_list(["sm_80"]), {})
    cpu, gpu = plan.cells
    assert cpu.id == "train-cudacpu"
    assert L.LABEL_CUDA not in cpu.labels and L.LABEL_MIN_DRIVER not in cpu.labels
    assert L.LABEL_ARCH_LIST not in cpu.labels
    assert gpu.labels[L.LABEL_MIN_DRIVER] == str(min_driver_for("12.6"))
