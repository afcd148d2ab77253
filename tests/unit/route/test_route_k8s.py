"""`route --format k8s`: valid Kubernetes (the API's own OpenAPI schema); that it admits a node
exactly when verify passes there is test_route_k8s_matches_verify.py."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import image_needs
from gpuship.errors import UsageError
from gpuship.report.kubernetes import render_kubernetes
from gpuship.report.model import Report
from gpuship.route.kubernetes import node_selector_terms, parse_toleration, pod_constraints

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
    return image_needs(f"app:{cuda}-{arch}", {}, labels)


def _fragment(needs: object, config: VerifyConfig, tolerations: list[dict[str, str]]) -> dict:
    terms = node_selector_terms({"linux/amd64": needs}, config)  # type: ignore[dict-item]
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
