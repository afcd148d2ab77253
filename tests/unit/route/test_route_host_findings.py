"""`route` names each host that lags its pool's driver floor once, whatever the number of
images routed, and each label its audit contradicts; stale hosts are not judged."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

from gpuship.cli.main import main
from gpuship.compat.config import VerifyConfig
from gpuship.compat.floor import DriverFloor
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.registry.access import RegistryAccess
from gpuship.route.config import RouteConfig
from gpuship.route.inventory import Inventory, InventoryEntry
from gpuship.route.run import RouteRequest, Settings, route_over
from unit.compat.compat_builders import A100, audit, gpu

NOW = datetime(2026, 11, 29, 17, 30, tzinfo=timezone.utc)
FLOORS = DriverFloor(pools={"gpu-a100-570": "570.86.10"})


def read_needs(reference: str, platform: str) -> ImageGpuNeeds:
    cuda = reference.rsplit(":", 1)[1]
    labels = {"io.gpuship.cuda": cuda, "io.gpuship.arch-list": "8.0"}
    return image_needs(reference, {}, labels)


def _fleet() -> Inventory:
    current = audit(570, [gpu(**A100)], labels=["gpu-a100-570"])
    # a 550 host in the 570 pool: its label lies too (branch 570)
    lagging = audit(550, [gpu(**A100)], labels=["gpu-a100-570"])
    lagging = lagging.model_copy(
        update={"runner": lagging.runner.model_copy(update={"hostname": "a100-7"})}
    )
    return Inventory(
        "registry.example/fleet",
        (InventoryEntry("a", "sha256:1", current), InventoryEntry("b", "sha256:2", lagging)),
    )


def test_a_lagging_host_is_one_finding_for_any_number_of_images() -> None:
    settings = Settings(
        verify=VerifyConfig(driver_floor=FLOORS), route=RouteConfig(), access=RegistryAccess()
    )
    images = ("registry.example/app:12.4", "registry.example/app:12.6", "registry.example/app:12.8")
    request = RouteRequest(images=images, fleet="registry.example/fleet")
    report = route_over(request, settings, NOW, read_needs, _fleet())
    lags = [f for f in report.findings if f.rule == "GSV403"]
    assert [f.message for f in lags] == [
        "runner a100-7 lags pool gpu-a100-570: driver 550.144.03 < floor 570.86.10: "
        "upgrade it or take it out of the pool"
    ]
    lies = [f for f in report.findings if f.rule == "GSV404"]
    assert [f.message for f in lies] == [
        "runner a100-7: label gpu-a100-570 claims driver branch 570; the audit reads driver "
        "550.144.03"
    ]
    assert report.rules["GSV403"].name == "verify-host-lags-floor"
    # the labels that take the runner out, once each, for `--remove-labels`
    assert json.loads(report.outputs["label-removals"]) == [
        {"runner": "a100-7", "label": "gpu-a100-570", "rule": "GSV403"}
    ]


def test_without_a_floor_no_host_lags() -> None:
    settings = Settings(verify=VerifyConfig(), route=RouteConfig(), access=RegistryAccess())
    request = RouteRequest(images=("registry.example/app:12.4",), fleet="registry.example/fleet")
    report = route_over(request, settings, NOW, read_needs, _fleet())
    assert not [f for f in report.findings if f.rule == "GSV403"]


def test_remove_labels_apply_without_a_token_is_a_usage_error_before_any_call() -> None:
    err = io.StringIO()
    argv = ["route", "--fleet", "127.0.0.1:9/fleet", "x.example/app:1", "--remove-labels", "apply"]
    assert main(argv, {"GITHUB_REPOSITORY": "acme/app"}, io.StringIO(), err) == 2
    [line] = err.getvalue().strip().splitlines()
    assert "--remove-labels apply needs GPUSHIP_RUNNER_TOKEN" in line
