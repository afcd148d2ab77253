"""Kubernetes node affinity evaluated the way the scheduler does, for tests.

Terms are ORed, a term's expressions ANDed (kubernetes `component-helpers/scheduling/corev1/
nodeaffinity`: a NodeSelector matches when any term matches, a term when all its
requirements do; a term with no expressions matches nothing). Requirements follow
`apimachinery/pkg/labels` Requirement.Matches: In/NotIn compare the label's string value
(NotIn and DoesNotExist hold for an absent label), Exists/DoesNotExist ask only for the key,
Gt/Lt hold only when the label is present and both it and the single value parse as Go
`strconv.ParseInt(s, 10, 64)` integers. Also the GFD labels a node with an audit's readings
carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpuship.compat.audit import HostAudit

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def go_parse_int(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`, None where Go returns an error."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def _matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = requirement["key"], requirement["operator"]
    values = requirement.get("values", [])
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    assert operator in ("Gt", "Lt"), operator
    if key not in labels or len(values) != 1:
        return False
    have, want = go_parse_int(labels[key]), go_parse_int(values[0])
    if have is None or want is None:
        return False
    return have > want if operator == "Gt" else have < want


def admits(fragment: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a node with `labels` satisfies the fragment's required node affinity."""
    if "affinity" not in fragment:
        return False
    selector = fragment["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    return any(
        bool(term.get("matchExpressions"))
        and all(_matches(r, labels) for r in term["matchExpressions"])
        for term in selector["nodeSelectorTerms"]
    )


_KUBE_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def gfd_labels(audit: HostAudit) -> dict[str, str]:
    """The labels a node with this audit's readings carries: the kubelet's `kubernetes.io/*`
    and those GPU Feature Discovery writes for its first GPU (internal/lm/nvml.go,
    resource.go, mig-strategy.go; MIG under the `single` strategy, whose labels for a GPU with
    MIG on and no MIG device are the "invalid" set: count 0, memory 0, no slices)."""
    major, minor, *rest = audit.nvml.driver_version.split(".")
    cuda_major, cuda_minor = audit.nvml.cuda_driver_version.split(".")[:2]
    gpu = audit.nvml.gpus[0]
    cc_major, cc_minor = gpu.compute_capability.split(".")
    labels = {
        "kubernetes.io/hostname": audit.runner.hostname,
        "kubernetes.io/arch": _KUBE_ARCH.get(audit.system.machine, audit.system.machine),
        "kubernetes.io/os": "linux",
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rest[0] if rest else "",
        "nvidia.com/cuda.driver-version.full": audit.nvml.driver_version,
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/gpu.compute.major": cc_major,
        "nvidia.com/gpu.compute.minor": cc_minor,
        "nvidia.com/gpu.product": gpu.name.replace(" ", "-"),
    }
    if gpu.mig_enabled:
        devices = [d for g in audit.nvml.gpus for d in g.mig_devices]
        labels["nvidia.com/mig.strategy"] = "single"
        if not devices:
            labels["nvidia.com/gpu.count"] = "0"
            labels["nvidia.com/gpu.memory"] = "0"
            return labels
        labels["nvidia.com/gpu.count"] = str(len(devices))
        smallest = min(d.memory_total_bytes or gpu.memory_total_bytes for d in devices)
        labels["nvidia.com/gpu.memory"] = str(smallest // 2**20)
        labels["nvidia.com/gpu.slices.gi"] = "1"
    else:
        labels["nvidia.com/gpu.count"] = str(len(audit.nvml.gpus))
        labels["nvidia.com/gpu.memory"] = str(gpu.memory_total_bytes // 2**20)
    return labels
