"""The route verdict as Kubernetes scheduling constraints on NVIDIA GPU Feature Discovery labels.

Label names are GFD's (NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery/README.md`,
"Generated Labels"; written by `internal/lm/nvml.go` and `internal/lm/resource.go`):

- `nvidia.com/cuda.driver-version.major|minor|revision`: the driver version's parts (GFD
  v0.15.0 on, the labels this output needs; `revision` is empty for a two-part driver; the
  older `nvidia.com/cuda.driver.major|minor|rev` are still written but marked deprecated);
- `nvidia.com/cuda.runtime-version.major|minor`: the CUDA version the driver supports (NVML's
  `cudaDriverVersion`, "runtime" in GFD's naming; v0.15.0 on);
- `nvidia.com/gpu.compute.major|minor`: the GPU's compute capability;
- `nvidia.com/gpu.memory`: memory per GPU in MiB (per MIG device under the `single` strategy);
- `nvidia.com/gpu.count`: GPUs (MIG devices under `single`);
- `nvidia.com/gpu.slices.gi`: present only for MIG devices (`single` strategy);
- `kubernetes.io/arch`: the node's CPU architecture (the kubelet's, GOARCH names).

A node matches exactly when verify passes on it (`compat.regions`: the verdict's own checks,
asked once per region of label values), given what no label shows: every GPU brand must pass,
and the host state checks (runtime, CDI spec) come from the fleet's audits by host name.
Node selector values are strings; `Gt`/`Lt` read them as integers (Kubernetes
`NodeSelectorRequirement`), which is how versions are compared here, never as text.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from gpuship import platforms
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.regions import (
    MINORS,
    Capabilities,
    Region,
    VersionRange,
    device_needs,
    passing_regions,
)
from gpuship.limits import DEFAULT_LIMITS

DRIVER_MAJOR = "nvidia.com/cuda.driver-version.major"
DRIVER_MINOR = "nvidia.com/cuda.driver-version.minor"
DRIVER_REVISION = "nvidia.com/cuda.driver-version.revision"
# The CUDA version the driver supports (NVML's, "runtime" in GFD's naming).
CUDA_MAJOR = "nvidia.com/cuda.runtime-version.major"
CUDA_MINOR = "nvidia.com/cuda.runtime-version.minor"
COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"
COMPUTE_MINOR = "nvidia.com/gpu.compute.minor"
GPU_MEMORY = "nvidia.com/gpu.memory"
GPU_COUNT = "nvidia.com/gpu.count"
MIG_SLICES = "nvidia.com/gpu.slices.gi"
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
DRIVER_KEYS = (DRIVER_MAJOR, DRIVER_MINOR, DRIVER_REVISION)
CUDA_KEYS = (CUDA_MAJOR, CUDA_MINOR)

Requirement = dict[str, Any]
Term = list[Requirement]


def _req(key: str, operator: str, *values: object) -> Requirement:
    requirement: Requirement = {"key": key, "operator": operator}
    if values:
        requirement["values"] = [str(v) for v in values]
    return requirement


def node_selector_terms(
    needs: Mapping[str, ImageGpuNeeds],
    config: VerifyConfig,
    excluded_hosts: Sequence[str] = (),
    max_verdicts: int = DEFAULT_LIMITS.regions_max_verdicts,
) -> list[Term]:
    """The ORed terms of `requiredDuringSchedulingIgnoredDuringExecution` for an image with
    these needs per platform; [] = no node can run it. Platforms whose needs give the same
    terms share them under one `kubernetes.io/arch In` list. `max_verdicts`: per platform,
    limits.regions-max-verdicts."""
    common = _device_terms(config)
    if excluded_hosts:
        common.append(_req(HOSTNAME, "NotIn", *sorted(excluded_hosts)))
    arches: dict[str, list[str]] = {}
    rendered: dict[str, list[Term]] = {}
    for platform, platform_needs in sorted(needs.items()):
        terms = [
            term
            for region in passing_regions(platform_needs, config, platform, max_verdicts)
            for term in region_terms(region)
        ]
        if terms:
            key = repr(terms)
            arches.setdefault(key, []).append(platforms.architecture(platform))
            rendered[key] = terms
    return [
        [_req(ARCH, "In", *sorted(set(arches[key]))), *common, *term]
        for key, terms in rendered.items()
        for term in terms
    ]


def _device_terms(config: VerifyConfig) -> Term:
    """GPU count, memory per GPU and MIG, as the device checks count them."""
    device = device_needs(config)
    terms: Term = []
    if device.count > 0:
        terms.append(_req(GPU_COUNT, "Gt", device.count - 1))
    if device.memory_mib is not None:
        terms.append(_req(GPU_MEMORY, "Gt", device.memory_mib - 1))
    if device.mig == "forbid":
        terms.append(_req(MIG_SLICES, "DoesNotExist"))
    elif device.mig == "require":
        terms.append(_req(MIG_SLICES, "Exists"))
    return terms


def region_terms(region: Region) -> list[Term]:
    """A region as ORed terms: its driver span x its CUDA span x its compute capabilities."""
    return [
        [*driver, *cuda, *capability]
        for driver, cuda, capability in itertools.product(
            span_terms(region.driver, DRIVER_KEYS, blank_last=True),
            span_terms(region.cuda, CUDA_KEYS),
            capability_terms(region.capabilities),
        )
    ]


def span_terms(span: VersionRange, keys: Sequence[str], *, blank_last: bool = False) -> list[Term]:
    """Alternatives meaning low <= version < high, compared part by part on integer labels
    `keys`. With `blank_last`, the last label may be empty and then reads as 0 (GFD's
    revision of a two-part driver, which the verdict compares as `.0`)."""
    return _range(span.low, span.high, list(keys), blank_last)


def _range(
    low: tuple[int, ...] | None, high: tuple[int, ...] | None, keys: list[str], blank: bool
) -> list[Term]:
    if len(keys) == 1:
        return _part(keys[0], low[0] if low else None, high[0] if high else None, blank)
    if low is not None and high is not None and low[0] == high[0]:
        return [[*_equals(keys[0], low[0]), *t] for t in _range(low[1:], high[1:], keys[1:], blank)]
    alternatives: list[Term] = []
    first_low = None if low is None else low[0]
    if low is not None and any(low[1:]):  # first part at the low end, the rest >= low's rest
        alternatives += [
            [*_equals(keys[0], low[0]), *t] for t in _range(low[1:], None, keys[1:], blank)
        ]
        first_low = low[0] + 1
    first_high = None if high is None else high[0]
    if first_low is None or first_high is None or first_low < first_high:
        alternatives += _part(keys[0], first_low, first_high, False)
    if high is not None:  # first part at the high end, the rest below high's rest
        alternatives += [
            [*_equals(keys[0], high[0]), *t] for t in _range(None, high[1:], keys[1:], blank)
        ]
    return alternatives


def _part(key: str, low: int | None, high: int | None, blank: bool) -> list[Term]:
    """low <= label < high on one integer label (a blank label reads as 0 with `blank`)."""
    term: Term = []
    if low is not None and low > 0:
        term.append(_req(key, "Gt", low - 1))
    if high is not None:
        if high <= (low or 0):
            return []
        term.append(_req(key, "Lt", high))
    if blank and term and (low is None or low <= 0) and (high is None or high > 0):
        return [term, [_req(key, "In", "")]]
    return [term]


def _equals(key: str, value: int) -> Term:
    """key == value, as integers: Gt value-1 and Lt value+1."""
    return [_req(key, "Gt", value - 1), _req(key, "Lt", value + 1)]


def capability_terms(capabilities: Capabilities) -> list[Term]:
    """Alternatives admitting these compute capabilities: majors with the same minors share a
    term, and the majors beyond the named ones are one `Gt`."""
    by_minors: dict[tuple[int, ...], list[int]] = {}
    majors = sorted({major for major, _ in capabilities.listed})
    for major in majors:
        minors = tuple(sorted(m for j, m in capabilities.listed if j == major))
        by_minors.setdefault(minors, []).append(major)
    every = tuple(MINORS)
    terms: list[Term] = []
    beyond = capabilities.beyond
    for minors, group in by_minors.items():
        listed = group
        if minors == every and beyond is not None:
            # A full run of majors up to the last named one joins the majors beyond it.
            run = [m for m in group if all(k in group for k in range(m, beyond + 1))]
            if run:
                beyond = min(run) - 1
                listed = [m for m in group if m not in run]
        if listed:
            terms.append([_req(COMPUTE_MAJOR, "In", *listed), _req(COMPUTE_MINOR, "In", *minors)])
    if beyond is not None:
        terms.append([_req(COMPUTE_MAJOR, "Gt", beyond), _req(COMPUTE_MINOR, "In", *every)])
    return terms


def pod_constraints(terms: list[Term], tolerations: Sequence[Requirement]) -> dict[str, Any]:
    """The PodSpec fragment: `affinity` (and `tolerations` when asked)."""
    fragment: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": term} for term in terms]
                }
            }
        }
    }
    if tolerations:
        fragment["tolerations"] = list(tolerations)
    return fragment


def parse_toleration(text: str) -> Requirement:
    """`KEY[=VALUE][:EFFECT]` -> a Toleration (`Exists` without a value, `Equal` with one)."""
    from gpuship.errors import UsageError

    body, _, effect = text.partition(":")
    key, has_value, value = body.partition("=")
    if not key or (effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute")):
        raise UsageError(
            f"--toleration {text!r}: expected KEY[=VALUE][:NoSchedule|PreferNoSchedule|NoExecute]"
        )
    toleration: Requirement = {"key": key, "operator": "Equal" if has_value else "Exists"}
    if has_value:
        toleration["value"] = value
    if effect:
        toleration["effect"] = effect
    return toleration
