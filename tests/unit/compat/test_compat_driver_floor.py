"""One driver floor for verify, fleet and route: the toolkit table's driver for the image's
CUDA release as the verdict judges it, raised by a min-driver label that asks more; memory
compared in whole MiB, as node labels show it."""

from __future__ import annotations

import pytest
from compat_builders import A100, H100, audit, gpu, image

from gpuship.compat import rule_ids
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Status
from gpuship.compat.checks.driver import native_driver, stated_min_driver
from gpuship.compat.config import VerifyConfig
from gpuship.compat.fleet import build_fleet
from gpuship.compat.readings import NvmlReadings
from gpuship.compat.verdict import judge
from gpuship.cuda.version import Version


def _on_driver(driver: str, cuda: str) -> HostAudit:
    host = audit(550, [gpu(**H100)])
    nvml = NvmlReadings(driver_version=driver, cuda_driver_version=cuda, gpus=host.nvml.gpus)
    return host.model_copy(update={"nvml": nvml})


def _labels(cuda: str, min_driver: str | None = None) -> dict[str, str]:
    labels = {"io.gpuship.cuda": cuda, "io.gpuship.arch-list": "9.0"}
    if min_driver:
        labels["io.gpuship.min-driver"] = min_driver
    return labels


@pytest.mark.parametrize(
    ("cuda", "min_driver", "native"),
    [
        ("12.4.1", None, "550.54.14"),  # the 12.4 GA row: a driver reporting 12.4 runs 12.4.1
        ("12.4.1", "550.54.15", "550.54.14"),  # the matrix's label for 12.4.1 asks nothing more
        ("12.2.2", "535.104.05", "535.54.03"),
        ("12.4.1", "570.86.10", "570.86.10"),  # a cell that raises it
        ("12.99", None, None),  # a release the table lacks: the CUDA version decides
        ("14.1", "600.1", "600.1"),  # an unknown family: only the label
    ],
)
def test_native_driver(cuda: str, min_driver: str | None, native: str | None) -> None:
    needs = image(labels=_labels(cuda, min_driver))
    assert native_driver(needs) == (Version.parse(native) if native else None)


def test_fleet_names_the_floor_verify_judges_by() -> None:
    fleet = build_fleet(
        [audit(550, [gpu(**A100)])], [image(labels=_labels("12.4.1"))], VerifyConfig()
    )
    assert fleet.driver_for_all_images == "550.54.14"


def test_a_raised_min_driver_label_fails_verify_below_it() -> None:
    needs = image(labels=_labels("12.4.1", "570.86.10"))
    assert stated_min_driver(needs) == Version.parse("570.86.10")
    verdict = judge(_on_driver("560.35.03", "12.6"), needs, VerifyConfig())
    assert verdict.status is Status.FAIL
    assert "560.35.03 < 570.86.10, the minimum the image states" in verdict.reason
    assert judge(_on_driver("570.86.10", "12.8"), needs, VerifyConfig()).status is Status.OK


def test_the_matrix_label_keeps_minor_version_compatibility() -> None:
    # The label the matrix writes for 12.4.1 is the table's row: 535 still runs it with a warning.
    needs = image(labels=_labels("12.4.1", "550.54.15"))
    assert stated_min_driver(needs) is None
    assert judge(_on_driver("535.54.03", "12.2"), needs, VerifyConfig()).status is Status.WARN
    assert judge(_on_driver("550.54.14", "12.4"), needs, VerifyConfig()).status is Status.OK


def test_a_min_driver_label_without_cuda_is_enforced() -> None:
    needs = image(labels={"io.gpuship.min-driver": "560.35.03", "io.gpuship.arch-list": "9.0"})
    assert judge(_on_driver("550.54.14", "12.4"), needs, VerifyConfig()).status is Status.FAIL


@pytest.mark.parametrize(
    ("gib", "status"), [(79.6, Status.FAIL), (81511 / 1024, Status.OK), (80, Status.OK)]
)
def test_memory_is_compared_in_whole_mib(gib: float, status: Status) -> None:
    # 79.6 GiB is 81510.4 MiB: `nvidia.com/gpu.memory` shows a GPU of exactly that size as
    # 81510, so verify, like the node affinity, asks for 81511 whole MiB.
    host = audit(550, [gpu(**{**H100, "memory_gib": gib})])
    checks = judge(host, None, VerifyConfig(min_memory_gib=79.6)).checks
    assert [c.status for c in checks if c.rule == rule_ids.MEMORY] == [status]
