"""CDI spec staleness and boot-time regeneration: read from real spec files and unit files,
judged by verify (a stale spec fails with the command that fixes it)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.verdict import judge
from gpuship.host.container import parse_cdi_spec, read_cdi_refresh_units
from gpuship.verify.rules import CDI_SPEC
from unit.compat.compat_builders import A100, audit, gpu

CDI_DATA = Path(__file__).parents[2] / "data" / "cdi"
SPEC_550 = CDI_DATA / "nvidia-550.54.15.yaml"
REFRESH_SERVICE = """[Unit]
Description=Refresh NVIDIA CDI specification file
[Service]
Type=oneshot
ExecStart=/usr/bin/nvidia-ctk cdi generate
[Install]
WantedBy=multi-user.target
"""


def test_the_sample_spec_is_a_valid_cdi_spec() -> None:
    defs = json.loads((CDI_DATA / "defs.json").read_text())
    registry = Registry().with_resource(
        "defs.json", Resource.from_contents(defs, default_specification=DRAFT7)
    )
    schema = json.loads((CDI_DATA / "schema.json").read_text())
    jsonschema.Draft7Validator(schema, registry=registry).validate(
        yaml.safe_load(SPEC_550.read_text())
    )


def test_the_spec_names_the_driver_it_was_generated_for() -> None:
    reading = parse_cdi_spec(SPEC_550)
    assert reading.kind == "nvidia.com/gpu"
    assert "nvidia.com/gpu=all" in reading.devices
    # libcuda/libnvidia-ml mounts and --host-driver-version agree; egl-wayland's 1.1.13 is not
    # a driver version.
    assert reading.driver_versions == ["550.54.15"]


def test_a_spec_left_from_the_previous_driver_fails_with_the_fixing_command() -> None:
    spec = parse_cdi_spec(SPEC_550)
    # The NVML reading says 570 is loaded: the driver was updated, the spec was not.
    host = audit(570, [gpu(**A100)])
    host = host.model_copy(
        update={"container": host.container.model_copy(update={"cdi_specs": [spec]})}
    )
    verdict = judge(host, None, VerifyConfig())
    (check,) = [c for c in verdict.checks if c.rule == CDI_SPEC]
    assert verdict.status is Status.FAIL
    assert check.status is Status.FAIL
    assert "generated for driver 550.54.15 but driver 570.195.03 is loaded" in check.message
    assert check.fix is not None
    assert f"nvidia-ctk cdi generate --output={SPEC_550}" in check.fix


def test_a_current_spec_passes() -> None:
    spec = parse_cdi_spec(SPEC_550).model_copy(update={"driver_versions": ["550.144.03"]})
    host = audit(550, [gpu(**A100)])
    host = host.model_copy(
        update={"container": host.container.model_copy(update={"cdi_specs": [spec]})}
    )
    checks = [c for c in judge(host, None, VerifyConfig()).checks if c.rule == CDI_SPEC]
    assert [c.status for c in checks] == [Status.OK]


@pytest.mark.parametrize(
    ("enabled", "spec_path", "warned"),
    [
        (False, "/etc/cdi/nvidia.yaml", True),
        (True, "/etc/cdi/nvidia.yaml", False),
        # /var/run is tmpfs: a spec there was written since boot.
        (False, "/var/run/cdi/nvidia.yaml", False),
    ],
)
def test_a_lasting_spec_nothing_regenerates_at_boot_is_a_warning(
    tmp_path: Path, enabled: bool, spec_path: str, warned: bool
) -> None:
    units = tmp_path / "etc-systemd-system"
    units.mkdir()
    (units / "nvidia-cdi-refresh.service").write_text(REFRESH_SERVICE)
    if enabled:
        wants = units / "multi-user.target.wants"
        wants.mkdir()
        (wants / "nvidia-cdi-refresh.service").symlink_to(units / "nvidia-cdi-refresh.service")
    refresh = read_cdi_refresh_units([str(units)])
    assert [(u.name, u.enabled) for u in refresh] == [("nvidia-cdi-refresh.service", enabled)]
    spec = parse_cdi_spec(SPEC_550).model_copy(
        update={"path": spec_path, "driver_versions": ["550.144.03"]}
    )
    host = audit(550, [gpu(**A100)])
    container = host.container.model_copy(
        update={"cdi_specs": [spec], "cdi_refresh_units": refresh}
    )
    host = host.model_copy(update={"container": container})
    statuses = [c.status for c in judge(host, None, VerifyConfig()).checks if c.rule == CDI_SPEC]
    assert (Status.WARN in statuses) is warned


def test_any_unit_running_cdi_generate_counts_and_others_do_not(tmp_path: Path) -> None:
    units = tmp_path / "system"
    units.mkdir()
    (units / "cdi-at-boot.service").write_text(
        "[Service]\nExecStart=/usr/bin/nvidia-ctk --debug cdi generate --output=/etc/cdi/n.yaml\n"
    )
    (units / "docker.service").write_text("[Service]\nExecStart=/usr/bin/dockerd\n")
    found = read_cdi_refresh_units([str(units), str(tmp_path / "absent")])
    assert [u.name for u in found] == ["cdi-at-boot.service"]
    assert not found[0].enabled
