"""Kubernetes node affinity evaluated the way the scheduler does, for tests.

Terms are ORed, a term's expressions ANDed; `Gt`/`Lt` parse the label value and the single
requirement value as integers and a value that does not parse does not match (kubernetes
`pkg/apis/core/v1/helper` NodeSelectorRequirementsAsSelector + labels.Requirement.Matches).
Also the GFD labels a node with this audit's readings would carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuship.compat.audit import HostAudit


def _matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = requirement["key"], requirement["operator"]
    values = requirement.get("values", [])
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if key not in labels:
        return operator == "NotIn"
    value = labels[key]
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    try:
        have, want = int(value), int(values[0])
    except ValueError:
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
        all(_matches(r, labels) for r in term["matchExpressions"])
        for term in selector["nodeSelectorTerms"]
    )


def gfd_labels(audit: HostAudit) -> dict[str, str]:
    """The labels GPU Feature Discovery writes for a node with this audit's first GPU
    (internal/lm/nvml.go, resource.go; MIG under the `single` strategy)."""
    major, minor, *rest = audit.nvml.driver_version.split(".")
    gpu = audit.nvml.gpus[0]
    cc_major, cc_minor = gpu.compute_capability.split(".")
    labels = {
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rest[0] if rest else "",
        "nvidia.com/cuda.runtime-version.major": audit.nvml.cuda_driver_version.split(".")[0],
        "nvidia.com/cuda.runtime-version.minor": audit.nvml.cuda_driver_version.split(".")[1],
        "nvidia.com/gpu.compute.major": cc_major,
        "nvidia.com/gpu.compute.minor": cc_minor,
        "kubernetes.io/hostname": audit.runner.hostname,
    }
    if gpu.mig_enabled and gpu.mig_devices:
        devices = [d for g in audit.nvml.gpus for d in g.mig_devices]
        labels["nvidia.com/gpu.count"] = str(len(devices))
        smallest = min(d.memory_total_bytes or gpu.memory_total_bytes for d in devices)
        labels["nvidia.com/gpu.memory"] = str(smallest // 2**20)
        labels["nvidia.com/gpu.slices.gi"] = "1"
    else:
        labels["nvidia.com/gpu.count"] = str(len(audit.nvml.gpus))
        labels["nvidia.com/gpu.memory"] = str(gpu.memory_total_bytes // 2**20)
    return labels
