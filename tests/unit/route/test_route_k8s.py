"""`route --format k8s`: valid Kubernetes (the API's own OpenAPI schema) expressing the verdict
verify gives, on the labels GPU Feature Discovery puts on nodes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from k8s_match import admits, gfd_labels
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gpuship.compat import rule_ids as rules
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import needs_from_env_and_labels
from gpuship.compat.verdict import Status, judge
from gpuship.errors import UsageError
from gpuship.report.kubernetes import render_kubernetes
from gpuship.report.model import Report
from gpuship.route.kubernetes import node_selector_terms, parse_toleration, pod_constraints
from unit.verify.verify_builders import A100, DRIVERS, H100, L4, RTX4090, T4, audit, gpu

SCHEMA = Path(__file__).parents[2] / "data" / "schemas" / "k8s-api-v1-affinity-toleration.json"
SCHEMAS = "#/components/schemas/io.k8s.api.core.v1."


def _validator(definition: str) -> jsonschema.Draft202012Validator:
    document = json.loads(SCHEMA.read_text())
    registry = Registry().with_resource(
        "k8s.json", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    return jsonschema.Draft202012Validator(
        {"$ref": f"k8s.json{SCHEMAS}{definition}"}, registry=registry
    )


def _no_unknown_keys(value: object, definition: str, document: dict[str, object]) -> None:
    """Every key we emit is a property the API defines (OpenAPI leaves extra keys open)."""
    schema = document["components"]["schemas"][f"io.k8s.api.core.v1.{definition}"]  # type: ignore[index]
    assert isinstance(value, dict)
    assert set(value) <= set(schema["properties"]), (definition, set(value))


def _image(cuda: str, arch: str | None) -> object:
    labels = {"io.gpuship.cuda": cuda}
    if arch:
        labels["io.gpuship.arch-list"] = arch
    return needs_from_env_and_labels(f"app:{cuda}-{arch}", {}, labels)


def _fragment(needs: object, config: VerifyConfig, tolerations: list[dict[str, str]]) -> dict:
    terms = node_selector_terms(needs, config)  # type: ignore[arg-type]
    return pod_constraints(terms, tolerations) if terms else {}


def test_output_validates_against_the_kubernetes_openapi_schema() -> None:
    document = json.loads(SCHEMA.read_text())
    tolerations = [parse_toleration("nvidia.com/gpu:NoSchedule"), parse_toleration("pool=a100")]
    fragment = _fragment(
        _image("12.4", "8.0;9.0+PTX"), VerifyConfig(min_memory_gib=40), tolerations
    )
    rendered = render_kubernetes(
        Report(command="route", result={"kubernetes": [{"image": "app", **fragment}]})
    )
    (parsed,) = list(yaml.safe_load_all(rendered))
    _validator("Affinity").validate(parsed["affinity"])
    _no_unknown_keys(parsed["affinity"], "Affinity", document)
    _no_unknown_keys(parsed["affinity"]["nodeAffinity"], "NodeAffinity", document)
    for term in parsed["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]:
        for requirement in term["matchExpressions"]:
            _no_unknown_keys(requirement, "NodeSelectorRequirement", document)
            assert requirement["operator"] in {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
            if requirement["operator"] in {"Gt", "Lt"}:
                (value,) = requirement["values"]
                int(value)  # the API reads Gt/Lt values as integers
    for toleration in parsed["tolerations"]:
        _validator("Toleration").validate(toleration)
        _no_unknown_keys(toleration, "Toleration", document)
    assert parsed["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "pool", "operator": "Equal", "value": "a100"},
    ]


def test_a_wrong_shape_is_caught_by_the_schema() -> None:
    # The check can fail: a values list of numbers is not what the API accepts.
    bad = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Gt", "values": [5]}]}]
    }}}  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        _validator("Affinity").validate(bad)


def test_bad_toleration_flag_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="KEY"):
        parse_toleration("nvidia.com/gpu:Sometimes")


def _compat_only(checks: tuple) -> bool:
    """verify passes only through minor-version or forward compatibility (driver below the
    native floor): GFD labels carry no GPU brand and the k8s output never relies on it."""
    return any(
        c.rule == rules.DRIVER
        and c.status in (Status.WARN, Status.NOTE)
        and ("minor-compatibility" in c.message or "forward compatibility" in c.message)
        for c in checks
    )


HOST_GPUS = {
    "T4": [gpu(**T4)],
    "A100": [gpu(**A100)],
    "2xH100": [gpu(**H100), gpu(index=1, **H100)],
    "L4": [gpu(**L4)],
    "RTX4090": [gpu(**RTX4090)],
    "A100-MIG": [gpu(**A100, mig_slices_gib=[9.75, 19.5])],
}
IMAGES = [
    _image(cuda, arch)
    for cuda, arch in itertools.product(
        ("11.8", "12.1", "12.4", "12.8", "13.0", "13.9"),
        ("8.0;9.0", "7.5;8.0", "8.0+PTX", "9.0", "8.9", None),
    )
]
CONFIGS = {
    "default": VerifyConfig(require_gpu_runtime=False),
    "minor-compat-error": VerifyConfig(require_gpu_runtime=False, minor_version_compat="error"),
    "ptx-jit-error": VerifyConfig(require_gpu_runtime=False, ptx_jit="error"),
    "40GiB": VerifyConfig(require_gpu_runtime=False, min_memory_gib=40),
    "2 GPUs": VerifyConfig(require_gpu_runtime=False, gpus=2),
    "mig-forbid": VerifyConfig(require_gpu_runtime=False, mig="forbid"),
    "mig-require": VerifyConfig(require_gpu_runtime=False, mig="require"),
}


@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_the_constraints_express_the_verify_verdict_on_every_host(config_name: str) -> None:
    config = CONFIGS[config_name]
    compared = admitted = 0
    for needs in IMAGES:
        fragment = _fragment(needs, config, [])
        for branch, (host_name, gpus) in itertools.product(DRIVERS, HOST_GPUS.items()):
            host = audit(branch, gpus)
            verdict = judge(host, needs, config)
            node = admits(fragment, gfd_labels(host))
            case = f"{needs.reference} on {host_name}/{branch}: {verdict.reason}"
            # Never schedules where verify fails.
            assert not (node and verdict.status is Status.FAIL), case
            # Schedules wherever verify passes without a compatibility mode.
            if verdict.status is not Status.FAIL and not _compat_only(verdict.checks):
                assert node, case
            compared += 1
            admitted += node
    assert compared == len(IMAGES) * len(DRIVERS) * len(HOST_GPUS)
    assert 0 < admitted < compared  # the sweep has both answers
