"""One finding per host that lags its driver floor, one per label its audit contradicts, each
with the GitHub REST call that takes the label off (GitHub's API cannot run here: the call is
checked as text; the removal itself is tested against a stand-in server)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from compat_builders import A100, H100, L4, RTX4090, T4, audit, gpu

from gpuship.cli.main import main
from gpuship.compat.config import VerifyConfig
from gpuship.compat.fleet import build_fleet
from gpuship.compat.floor import DriverFloor
from gpuship.compat.hosts import NamedHost, host_findings
from gpuship.compat.needs import image_needs
from gpuship.report import Severity
from gpuship.verify.report import fleet_report

FLOORS = DriverFloor(default="550.54.15", pools={"gpu-a100-570": "570.86.10"})


def _host(name: str, branch: int, gpus: list[dict[str, object]], *labels: str) -> NamedHost:
    readings = [gpu(index=i, **g) for i, g in enumerate(gpus)]  # type: ignore[arg-type]
    host = audit(branch, readings, labels=labels)
    runner = host.runner.model_copy(update={"runner_name": name})
    return NamedHost(name, host.model_copy(update={"runner": runner}))


def test_a_host_below_its_pools_floor_is_one_finding_with_the_removal_call() -> None:
    lagging = _host("a100-7", 550, [A100], "gpu", "gpu-a100-570")
    [finding] = [f for f in host_findings([lagging], FLOORS) if f.rule == "GSV403"]
    assert finding.severity is Severity.WARNING
    assert finding.message == (
        "runner a100-7 lags pool gpu-a100-570: driver 550.144.03 < floor 570.86.10: "
        "upgrade it or take it out of the pool"
    )
    assert finding.fix is not None
    assert finding.fix.startswith(
        "DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}/labels/gpu-a100-570 "
    )
    assert "GET /repos/{owner}/{repo}/actions/runners?name=a100-7" in finding.fix


def test_the_fleet_floor_applies_where_no_pool_floor_does() -> None:
    old = _host("t4-1", 535, [T4], "self-hosted", "gpu", "gpu-t4-535")
    [finding] = [f for f in host_findings([old], FLOORS) if f.rule == "GSV403"]
    assert finding.message.startswith("runner t4-1 lags the fleet: driver 535.230.02 < floor ")
    assert finding.fix is not None
    # every label of the runner but GitHub's own, which cannot be removed
    assert "/labels/gpu " in finding.fix and "/labels/gpu-t4-535 " in finding.fix
    assert "/labels/self-hosted " not in finding.fix


def test_hosts_at_their_floor_and_hosts_without_one_raise_nothing() -> None:
    at_floor = _host("a100-1", 570, [A100], "gpu-a100-570")
    assert host_findings([at_floor], FLOORS) == []
    unfloored = _host("t4-2", 470, [T4], "gpu-t4-470")
    assert host_findings([unfloored], DriverFloor()) == []


def test_one_finding_per_host_not_per_image_and_host() -> None:
    lagging = _host("a100-7", 550, [A100], "gpu-a100-570")
    images = [
        image_needs(f"app:{c}", {}, {"io.gpuship.cuda": c, "io.gpuship.arch-list": "8.0"})
        for c in ("12.4", "12.8")
    ]
    fleet = build_fleet([lagging.audit], images, VerifyConfig(driver_floor=FLOORS))
    report = fleet_report(fleet, host_findings([lagging], FLOORS))
    assert [f.rule for f in report.findings].count("GSV403") == 1


@pytest.mark.parametrize(
    ("label", "branch", "gpus", "claims"),
    [
        ("gpu-a100-570", 550, [A100], "driver branch 570; the audit reads driver 550.144.03"),
        ("gpu-h100-550", 550, [A100], "GPU h100; the audit reads NVIDIA A100-SXM4-80GB"),
        ("gpu-l4-570-2", 570, [L4], "2 GPUs; the audit reads 1"),
    ],
)
def test_a_label_the_audit_contradicts_is_an_error(
    label: str, branch: int, gpus: list[dict[str, object]], claims: str
) -> None:
    host = _host("r1", branch, gpus, "gpu", label)
    [finding] = host_findings([host], DriverFloor())
    assert finding.rule == "GSV404"
    assert finding.severity is Severity.ERROR
    assert finding.message == f"runner r1: label {label} claims {claims}"
    assert finding.fix is not None and f"/labels/{label} " in finding.fix


@pytest.mark.parametrize(
    ("label", "gpus"),
    [
        ("gpu-rtx4090-570", [RTX4090]),  # model found in "NVIDIA GeForce RTX 4090"
        ("gpu-h100-570-2", [H100, H100]),
        ("gpu-t4-570", [T4]),  # "Tesla T4"
        ("gpu-large", [A100]),  # not the scheme: no claim read from it
    ],
)
def test_labels_that_hold_raise_nothing(label: str, gpus: list[dict[str, object]]) -> None:
    assert host_findings([_host("r1", 570, gpus, label)], DriverFloor()) == []


def test_a_host_whose_gpus_were_not_read_contradicts_no_model_or_count() -> None:
    host = _host("r1", 570, [], "gpu-h100-570-8")
    assert host_findings([host], DriverFloor()) == []


def test_a_driver_in_no_version_form_is_unknown_not_lagging() -> None:
    host = _host("r1", 570, [A100], "gpu-a100-570")
    nvml = host.audit.nvml.model_copy(update={"driver_version": "unknown"})
    odd = NamedHost("r1", host.audit.model_copy(update={"nvml": nvml}))
    [finding] = host_findings([odd], FLOORS)
    assert finding.severity is Severity.NOTE
    assert "driver 'unknown' unknown" in finding.message


@pytest.mark.parametrize("command", ["verify", "fleet"])
def test_verify_and_fleet_name_the_lagging_host_from_gpuship_yaml(
    tmp_path: Path, command: str
) -> None:
    host = _host("a100-7", 550, [A100], "gpu-a100-550")
    audit_file = tmp_path / "a100-7.json"
    audit_file.write_text(host.audit.model_dump_json())
    matrix = tmp_path / "matrix.json"
    cell = {"id": "c1", "image": "app", "repository": "r.example/app", "tags": ["r.example/app:c1"]}
    matrix.write_text(json.dumps({"include": [{**cell, "cuda": "12.4", "arch_list": "8.0"}]}))
    config = tmp_path / "gpuship.yaml"
    config.write_text('verify:\n  driver-floor:\n    pools: {gpu-a100-550: "570.86.10"}\n')
    argv = (
        ["--audit", str(audit_file)]
        if command == "verify"
        else [str(audit_file), "--matrix", str(matrix)]
    )
    out = io.StringIO()
    main(["--config", str(config), command, *argv, "--format", "json"], {}, out, io.StringIO())
    document = json.loads(out.getvalue())
    lags = [f["message"] for f in document["findings"] if f["rule"] == "GSV403"]
    assert lags == [
        "runner a100-7 lags pool gpu-a100-550: driver 550.144.03 < floor 570.86.10: "
        "upgrade it or take it out of the pool"
    ]


@pytest.mark.parametrize("command", ["verify", "fleet"])
def test_a_lying_label_fails_the_report_and_the_exit_code_alike(
    tmp_path: Path, command: str
) -> None:
    host = _host("r1", 550, [A100], "gpu-a100-570")
    audit_file = tmp_path / "r1.json"
    audit_file.write_text(host.audit.model_dump_json())
    matrix = tmp_path / "matrix.json"
    cell = {"id": "c1", "image": "app", "repository": "r.example/app", "tags": ["r.example/app:c1"]}
    matrix.write_text(json.dumps({"include": [{**cell, "cuda": "12.2", "arch_list": "8.0"}]}))
    argv = (
        ["--audit", str(audit_file)]
        if command == "verify"
        else [str(audit_file), "--matrix", str(matrix)]
    )
    out = io.StringIO()
    code = main([command, *argv, "--format", "json"], {}, out, io.StringIO())
    document = json.loads(out.getvalue())
    assert [f["rule"] for f in document["findings"] if f["severity"] == "error"] == ["GSV404"]
    assert document["failed"] is True
    assert code == 1
