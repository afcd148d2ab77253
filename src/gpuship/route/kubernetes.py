"""The route verdict as Kubernetes scheduling constraints on NVIDIA GPU Feature Discovery labels.

Label names are GFD's (NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery/README.md`,
"Generated Labels"; written by `internal/lm/nvml.go` and `internal/lm/resource.go`):

- `nvidia.com/cuda.driver-version.major|minor|revision`: the driver version's parts (GFD
  v0.15.0 on; the older `nvidia.com/cuda.driver.major|minor|rev` are still written but marked
  deprecated);
- `nvidia.com/cuda.runtime-version.major|minor`: the CUDA version the driver supports (used
  for a CUDA minor newer than the knowledge base's table);
- `nvidia.com/gpu.compute.major|minor`: the GPU's compute capability;
- `nvidia.com/gpu.memory`: memory per GPU in MiB (per MIG device under the `single` strategy);
- `nvidia.com/gpu.count`: GPUs (MIG devices under `single`);
- `nvidia.com/gpu.slices.gi`: present only for MIG devices (`single` strategy).

A node matches when the image runs on it without relying on compatibility modes: the driver
is at least the one that runs the image's CUDA natively, every GPU architecture is covered by
SASS (or by PTX where `verify.ptx-jit` allows JIT), memory, count and MIG as `verify:` asks.
Node selector values are strings; `Gt`/`Lt` read them as integers (Kubernetes
`NodeSelectorRequirement`), which is how versions are compared here, never as text.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from gpuship.compat.config import VerifyConfig
from gpuship.compat.fleet import required_driver
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.cuda.arch import ArchTarget, ComputeCapability, CoverageKind, kernel_coverage
from gpuship.cuda.drivers import minor_compat_floor
from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.knowledge import knowledge_base
from gpuship.cuda.version import Version

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

Requirement = dict[str, Any]
Term = list[Requirement]


def _req(key: str, operator: str, *values: object) -> Requirement:
    requirement: Requirement = {"key": key, "operator": operator}
    if values:
        requirement["values"] = [str(v) for v in values]
    return requirement


def _equals(key: str, value: int) -> Term:
    """key == value, as integers: Gt value-1 and Lt value+1."""
    return [_req(key, "Gt", value - 1), _req(key, "Lt", value + 1)]


def at_least(floor: Version, keys: Sequence[str]) -> list[Term]:
    """Alternatives (ORed) that together mean version >= floor, compared part by part on the
    labels `keys` (major, minor[, revision])."""
    parts = list(floor.parts[: len(keys)])
    alternatives: list[Term] = []
    for position, value in enumerate(parts):
        prefix = [
            req
            for key, v in zip(keys[:position], parts[:position], strict=True)
            for req in _equals(key, v)
        ]
        last = position == len(parts) - 1
        # The last part may equal the floor; every earlier part must exceed it here.
        alternatives.append([*prefix, _req(keys[position], "Gt", value - 1 if last else value)])
    return alternatives


def candidate_capabilities(targets: Sequence[ArchTarget]) -> list[ComputeCapability]:
    """Every compute capability a node can report that matters here: the knowledge base's GPUs
    and the image's own targets. A GPU newer than both is not admitted (not known to work)."""
    known = {ComputeCapability.parse(row.compute_capability) for row in knowledge_base().gpus}
    known.update(target.cc for target in targets)
    return sorted(known)


def capability_terms(targets: Sequence[ArchTarget], config: VerifyConfig) -> list[Term]:
    """Alternatives admitting each compute capability the image has a kernel for."""
    allowed: dict[int, list[int]] = {}
    for cc in candidate_capabilities(targets):
        kind = kernel_coverage(cc, targets).kind
        if kind is CoverageKind.SASS or (kind is CoverageKind.PTX_JIT and config.ptx_jit == "warn"):
            allowed.setdefault(cc.major, []).append(cc.minor)
    return [
        [_req(COMPUTE_MAJOR, "In", major), _req(COMPUTE_MINOR, "In", *minors)]
        for major, minors in sorted(allowed.items())
    ]


def node_selector_terms(
    needs: ImageGpuNeeds, config: VerifyConfig, excluded_hosts: Sequence[str] = ()
) -> list[Term]:
    """The ORed terms of `requiredDuringSchedulingIgnoredDuringExecution`; [] = no node can."""
    common: Term = []
    if config.min_memory_gib is not None:
        common.append(_req(GPU_MEMORY, "Gt", math.ceil(config.min_memory_gib * 1024) - 1))
    if config.gpus > 1:
        common.append(_req(GPU_COUNT, "Gt", config.gpus - 1))
    if config.mig == "forbid":
        common.append(_req(MIG_SLICES, "DoesNotExist"))
    elif config.mig == "require":
        common.append(_req(MIG_SLICES, "Exists"))
    if excluded_hosts:
        common.append(_req(HOSTNAME, "NotIn", *sorted(excluded_hosts)))
    groups: list[list[Term]] = []
    version = _version_terms(needs)
    if version is not None:
        groups.append(version)
    if needs.arch_targets is not None:
        groups.append(capability_terms(needs.arch_targets, config))
    if any(not group for group in groups):
        return []
    return [
        [*common, *(req for term in combination for req in term)]
        for combination in itertools.product(*groups)
    ] or [common]


def _version_terms(needs: ImageGpuNeeds) -> list[Term] | None:
    """Driver >= the one that runs the image natively; when the knowledge base lacks the
    release (a minor newer than its table) the driver's CUDA version >= the image's, which is
    what verify then judges by. An unknown CUDA family is not judged (verify only warns)."""
    floor = required_driver(needs)
    if floor is not None:
        return at_least(floor, (DRIVER_MAJOR, DRIVER_MINOR, DRIVER_REVISION))
    if needs.cuda is None:
        return None
    try:
        minor_compat_floor(needs.cuda)
    except UnknownVersion:
        return None
    return at_least(Version.parse(needs.cuda).major_minor(), (CUDA_MAJOR, CUDA_MINOR))


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
