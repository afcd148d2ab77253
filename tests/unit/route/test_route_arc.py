"""`route --format arc`: Actions Runner Controller scale sets as gha-runner-scale-set Helm values,
valid for the AutoscalingRunnerSet CRD the chart renders them into (gha-runner-scale-set 0.14.2,
vendored in tests/data/schemas), with the node affinity that admits exactly where verify
passes, one scale set per distinct set of constraints, and the cell ids as ARC >= 0.14 labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from k8s_match import admits, gfd_labels

from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.compat.verdict import judge
from gpuship.report.kubernetes import render_arc, render_kubernetes
from gpuship.report.model import Report
from gpuship.report.result import to_json
from gpuship.route.arc import scale_sets
from gpuship.route.kubernetes import node_selector_terms, parse_toleration, pod_constraints
from gpuship.route.result import KubernetesOnly
from unit.compat.compat_builders import A100, H100, L4, audit, gpu

SCHEMA = Path(__file__).parents[2] / "data" / "schemas" / "arc-autoscalingrunnerset-v1alpha1.json"
# What the chart (templates/autoscalingrunnerset.yaml) puts beside the values gpuship writes.
CHART_RUNNER = {"name": "runner", "image": "ghcr.io/actions/actions-runner:latest",
                "command": ["/home/runner/run.sh"]}  # fmt: skip


def needs(cell: str, cuda: str, arch: str, require: str | None = None) -> ImageGpuNeeds:
    labels = {"io.gpuship.cell": cell, "io.gpuship.cuda": cuda, "io.gpuship.arch-list": arch}
    env = {"NVIDIA_REQUIRE_CUDA": require} if require else {}
    return image_needs(cell, env, labels)


IMAGES = {
    "trainer-cu124": needs("trainer-cu124", "12.4", "8.0;9.0"),
    "server-cu124": needs("server-cu124", "12.4", "8.0;9.0"),  # same needs: same scale set
    "trainer-cu128": needs("trainer-cu128", "12.8", "9.0;10.0"),
    "registry.example/app@sha256:" + "ab" * 32: needs("x", "12.8", "9.0;10.0"),
    # A requirement no host meets: no scale set.
    "impossible": needs("impossible", "12.4", "9.0", require="cuda>=13.0,cuda<12.0"),
}


def documents(config: VerifyConfig) -> list[dict[str, Any]]:
    toleration = parse_toleration("nvidia.com/gpu:NoSchedule")
    out = []
    for name, gpu_needs in IMAGES.items():
        terms = node_selector_terms({"linux/amd64": gpu_needs}, config)
        out.append({"image": name, **(pod_constraints(terms, [toleration]) if terms else {})})
    return out


def arc(config: VerifyConfig) -> Any:
    cells = {name: "/" not in name for name in IMAGES}
    return scale_sets(documents(config), cells)


def crd_spec(values: dict[str, Any]) -> dict[str, Any]:
    """The AutoscalingRunnerSet the chart renders from the user's values and gpuship's."""
    spec = {
        "githubConfigUrl": "https://github.com/acme",
        "githubConfigSecret": "arc-secret",
        "runnerScaleSetName": values["runnerScaleSetName"],
        "template": {"spec": {**values["template"]["spec"], "containers": [CHART_RUNNER]}},
    }
    if "scaleSetLabels" in values:
        spec["runnerScaleSetLabels"] = values["scaleSetLabels"]
    return {"apiVersion": "actions.github.com/v1alpha1", "kind": "AutoscalingRunnerSet",
            "metadata": {"name": "gpu"}, "spec": spec}  # fmt: skip


def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())["openAPIV3Schema"])


def test_scale_sets_validate_against_the_autoscalingrunnerset_crd() -> None:
    found = arc(VerifyConfig())
    assert len(found) == 2  # the two 12.4 cells share one; the 12.8 cell and image another
    for scale_set in found:
        validator().validate(crd_spec(dict(scale_set.values)))
        for label in scale_set.labels:  # the chart's own check of scaleSetLabels
            assert 0 < len(label) < 256


def test_a_wrong_shape_is_caught_by_the_crd_schema() -> None:
    values = dict(arc(VerifyConfig())[0].values)
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(crd_spec({**values, "scaleSetLabels": "trainer-cu124"}))


def test_names_are_stable_and_labels_are_cell_ids() -> None:
    first, second = arc(VerifyConfig()), arc(VerifyConfig())
    assert [s.name for s in first] == [s.name for s in second]
    cu124, cu128 = first
    assert cu124.images == ("trainer-cu124", "server-cu124")
    assert cu124.labels == ("server-cu124", "trainer-cu124")
    assert cu128.labels == ("trainer-cu128",)  # the reference is no label
    assert cu128.name != cu124.name and cu124.name.startswith("gpuship-")
    # Other verify: settings give other constraints, so another scale set.
    assert arc(VerifyConfig(min_memory_gib=40))[0].name != cu124.name


def test_a_scale_sets_pods_land_where_verify_passes_for_each_of_its_images() -> None:
    config = VerifyConfig()
    for scale_set in arc(config):
        fragment = scale_set.values["template"]["spec"]
        for branch, model in [(b, m) for b in (525, 535, 550, 570, 580) for m in (A100, H100, L4)]:
            host = audit(branch, [gpu(**model)])
            runs = [
                judge(host, IMAGES[i], config).status is not Status.FAIL for i in scale_set.images
            ]
            assert admits(fragment, gfd_labels(host)) == all(runs)


def test_rendered_yaml_names_images_and_runs_on() -> None:
    config = VerifyConfig()
    report = Report(
        command="route",
        result=KubernetesOnly(tuple(documents(config)), tuple(IMAGES), arc(config)),
    )
    text = render_arc(report)
    parsed = [d for d in yaml.safe_load_all(text)]
    assert len(parsed) == 3 and parsed[2] == {}
    assert "# impossible: no node can run this image" in text
    first = arc(config)[0]
    assert (
        f"# runs-on: {first.name} (ARC >= 0.14 also: runs-on: server-cu124 or trainer-cu124)"
        in (text)
    )
    assert to_json(report.result)["arc"][0]["values"] == parsed[0]


INJECTION = "x\ntolerations: [{operator: Exists}]\n#"


@pytest.mark.parametrize("brk", ["\n", "\r", "\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("runnable", [True, False])
def test_a_name_with_a_line_break_writes_no_keys_of_its_own(brk: str, runnable: bool) -> None:
    # A cell id or io.gpuship.cell label comes from outside; it is only ever a comment.
    name = INJECTION.replace("\n", brk)
    config = VerifyConfig()
    impossible = "cuda>=13.0,cuda<12.0"
    gpu_needs = needs("x", "12.4", "9.0", require=None if runnable else impossible)
    terms = node_selector_terms({"linux/amd64": gpu_needs}, config)
    docs = ({"image": name, **(pod_constraints(terms, []) if terms else {})},)
    report = Report(
        command="route",
        result=KubernetesOnly(docs, (name,), scale_sets(docs, {name: True})),
    )
    for text in (render_kubernetes(report), render_arc(report)):
        (document,) = yaml.safe_load_all(text)
        assert "tolerations" not in keys(document)
    if runnable:  # the emitter quotes the name where it is a value: it reads back as it was
        assert yaml.safe_load(render_arc(report))["scaleSetLabels"] == [name]


def keys(value: object) -> set[str]:
    """Every mapping key at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()
