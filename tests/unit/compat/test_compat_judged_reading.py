"""`judged_reading`: what a fleet dedupes verdicts by. Differential property test: changing only
what the key leaves out (GPU and MIG UUIDs, PCI addresses, kernel, free memory when no check
reads it, ...) never changes `judge`'s verdict; changing what it keeps changes the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.compat.audit import HostAudit, audit_from_document
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.compat.verdict import judge, judged_reading
from unit.compat.compat_builders import A100, H100, T4, audit, gpu

READINGS = Path(__file__).parents[2] / "data" / "gpu-readings"

HOSTS = [
    audit(470, [gpu(**T4)]),
    audit(535, [gpu(**A100), gpu(index=1, **A100, free_gib=3, ecc_uncorrected=2)]),
    audit(570, [gpu(**A100, mig_slices_gib=[9.75, 19.5])], cdi_devices=["0", "all"]),
    audit(580, [gpu(**H100)], reachable=False, hook=False, toolkit_version="1.17.8"),
    *(
        audit_from_document(json.loads(path.read_text()), path.name)
        for path in sorted(READINGS.glob("*.audit.json"))
    ),
]
IMAGES = [
    image_needs(f"app-{cuda}-{arch}", {}, {"io.gpuship.cuda": cuda, "io.gpuship.arch-list": arch})
    for cuda, arch in (("11.8", "7.5;8.0"), ("12.4", "8.0+PTX"), ("12.8", "9.0"), ("13.0", "10.0"))
]
CONFIGS = [
    VerifyConfig(),
    VerifyConfig(require_gpu_runtime=False, min_memory_gib=16, ptx_jit="error"),
    VerifyConfig(min_free_memory_gib=10),
]

identity = st.text(alphabet="0123456789abcdefGPUMI-:.", min_size=1, max_size=40)


@st.composite
def same_kind_of_host(draw: st.DrawFn, host: HostAudit, config: VerifyConfig) -> HostAudit:
    """`host` with everything `judged_reading` leaves out drawn anew."""
    doc = host.model_dump(mode="json")
    doc["taken_at"] = draw(st.sampled_from(["2026-01-01T00:00:00+00:00", "2027-06-30T23:59:59"]))
    doc["tool_version"] = draw(st.sampled_from(["0.1.0", "9.9.9"]))
    doc["runner"] = {"hostname": draw(identity), "runner_name": draw(identity), "labels": ["x"]}
    doc["system"]["kernel"] = draw(identity)
    doc["system"]["os"] = draw(identity)
    doc["nvml"]["nvml_version"] = draw(st.none() | identity)
    for reading in doc["nvml"]["gpus"]:
        reading["uuid"] = draw(identity)
        reading["pci_bus_id"] = draw(st.none() | identity)
        reading["brand_code"] = draw(st.none() | st.integers(0, 20))
        for device in reading["mig_devices"]:
            device["uuid"] = draw(identity)
        if config.min_free_memory_gib is None:
            reading["memory_free_bytes"] = draw(st.none() | st.integers(0, 2**40))
    doc["container"]["docker"]["cgroup_driver"] = draw(st.sampled_from([None, "systemd"]))
    doc["container"]["readiness"] = draw(
        st.sampled_from(
            [
                None,
                {"device_nodes": ["nvidiactl"], "toolkit_mode": "legacy"},
                {
                    "gpu_containers": [
                        {
                            "id": draw(identity),
                            "name": draw(identity),
                            "image": "acme/llm:1",
                            "gpus_via": "device-request",
                            "restart_policy": "no",
                        }
                    ]
                },
            ]
        )
    )
    return audit_from_document(doc, "drawn")


@st.composite
def cases(draw: st.DrawFn) -> tuple[HostAudit, HostAudit, ImageGpuNeeds, VerifyConfig]:
    host = draw(st.sampled_from(HOSTS))
    config = draw(st.sampled_from(CONFIGS))
    return host, draw(same_kind_of_host(host, config)), draw(st.sampled_from(IMAGES)), config


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_what_the_key_leaves_out_never_changes_a_verdict(
    case: tuple[HostAudit, HostAudit, ImageGpuNeeds, VerifyConfig],
) -> None:
    host, twin, needs, config = case
    assert judged_reading(twin, config) == judged_reading(host, config)
    assert judge(twin, needs, config) == judge(host, needs, config)
    assert judge(twin, None, config) == judge(host, None, config)


def _changed(host: HostAudit, path: tuple[Any, ...], value: object) -> HostAudit:
    doc = host.model_dump(mode="json")
    place = doc
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return audit_from_document(doc, "changed")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("nvml", "driver_version"), "550.144.03"),
        (("nvml", "gpus", 0, "compute_capability"), "8.6"),
        (("nvml", "gpus", 0, "memory_total_bytes"), 8 * 2**30),
        (("system", "machine"), "aarch64"),
        (("nvml", "gpus", 0, "persistence_mode"), False),
    ],
)
def test_what_a_check_reads_changes_the_key(path: tuple[Any, ...], value: object) -> None:
    host = HOSTS[1]
    assert judged_reading(_changed(host, path, value), VerifyConfig()) != judged_reading(
        host, VerifyConfig()
    )


def test_free_memory_counts_once_a_check_reads_it() -> None:
    host = HOSTS[1]
    busier = _changed(host, ("nvml", "gpus", 0, "memory_free_bytes"), 2**30)
    assert judged_reading(busier, VerifyConfig()) == judged_reading(host, VerifyConfig())
    watching = VerifyConfig(min_free_memory_gib=10)
    assert judged_reading(busier, watching) != judged_reading(host, watching)
    needs = IMAGES[1]
    assert judge(busier, needs, watching) != judge(host, needs, watching)
