"""`route_over` end to end on data (the registry is read before it, by `run_route`): the
Kubernetes and ARC formats read an image for every GPU platform, with or without a fleet, and
an image no node can run is an error finding in both cases."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest
import yaml
from k8s_match import admits, gfd_labels

from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.errors import InputError, LimitExceeded
from gpuship.limits import DEFAULT_LIMITS
from gpuship.platforms import PlatformMissing
from gpuship.registry.access import RegistryAccess
from gpuship.report import Report, Severity
from gpuship.report.kubernetes import render_arc, render_kubernetes
from gpuship.route.config import RouteConfig
from gpuship.route.inventory import Inventory, InventoryEntry
from gpuship.route.run import RouteRequest, Settings, route_over
from unit.compat.compat_builders import H100, audit, gpu

NOW = datetime(2026, 11, 29, 17, 30, tzinfo=timezone.utc)
MULTI_ARCH = "registry.example/ml/app:1"  # linux/amd64 and linux/arm64 (GH200)
IMPOSSIBLE = "registry.example/ml/impossible:1"  # a requirement no host meets
SETTINGS = Settings(verify=VerifyConfig(), route=RouteConfig(), access=RegistryAccess())


def read_needs(reference: str, platform: str) -> ImageGpuNeeds:
    """The images' configs as the image stage reads them, per platform of their index."""
    if platform not in ("linux/amd64", "linux/arm64"):
        raise PlatformMissing(f"{reference} has no {platform}")
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=13.0,cuda<12.0"} if reference == IMPOSSIBLE else {}
    labels = {"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": "9.0"}
    return replace(image_needs(reference, env, labels), platform=platform)


def amd64_fleet() -> Inventory:
    """A fleet whose runners are all x86_64: its hosts name no arm64 platform."""
    host = audit(570, [gpu(**H100)], labels=["gpu-h100"])
    return Inventory("registry.example/fleet", (InventoryEntry("runner-1", "sha256:1", host),))


def route(format_: str, images: tuple[str, ...], fleet: Inventory | None) -> Report:
    request = RouteRequest(
        images=images,
        fleet=fleet.repository if fleet else None,
        kubernetes=format_ == "k8s",
        arc=format_ == "arc",
    )
    return route_over(request, SETTINGS, NOW, read_needs, fleet)


def gh200_and_h100() -> tuple[dict[str, str], dict[str, str]]:
    host = audit(570, [gpu(**H100)])
    arm64 = host.system.model_copy(update={"machine": "aarch64"})
    gh200 = host.model_copy(update={"system": arm64})
    return gfd_labels(gh200), gfd_labels(host)


@pytest.mark.parametrize("with_fleet", [False, True])
def test_k8s_and_arc_admit_arm64_nodes_for_a_multi_arch_image(with_fleet: bool) -> None:
    fleet = amd64_fleet() if with_fleet else None
    k8s = route("k8s", (MULTI_ARCH,), fleet)
    arc = route("arc", (MULTI_ARCH,), fleet)
    assert not k8s.failed and not arc.failed
    (fragment,) = yaml.safe_load_all(render_kubernetes(k8s))
    (values,) = yaml.safe_load_all(render_arc(arc))
    # The scale set's pods get exactly the constraints the k8s format gives the image.
    assert values["template"]["spec"] == fragment
    gh200, h100 = gh200_and_h100()
    assert admits(fragment, gh200) and admits(fragment, h100)
    # Both formats name the same scale set for the same image.
    assert arc.outputs["scale-sets"] == route("arc", (MULTI_ARCH,), fleet).outputs["scale-sets"]


@pytest.mark.parametrize("format_", ["k8s", "arc"])
@pytest.mark.parametrize("with_fleet", [False, True])
def test_an_image_no_node_can_run_is_an_error_with_or_without_a_fleet(
    format_: str, with_fleet: bool
) -> None:
    report = route(format_, (MULTI_ARCH, IMPOSSIBLE), amd64_fleet() if with_fleet else None)
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert report.failed
    assert [f.rule for f in errors] == ["GSQ101"]
    assert errors[0].message.startswith(IMPOSSIBLE)


def test_an_images_cell_label_that_is_no_cell_id_is_an_input_error() -> None:
    # The label comes from the registry; it names the image in every output, comments included.
    def labelled(reference: str, platform: str) -> ImageGpuNeeds:
        labels = {"io.gpuship.cuda": "12.4", "io.gpuship.cell": "x\ntolerations: []"}
        return replace(image_needs(reference, {}, labels), platform=platform)

    request = RouteRequest(images=(MULTI_ARCH,), kubernetes=True)
    with pytest.raises(InputError, match=rf"{MULTI_ARCH}: label io\.gpuship\.cell="):
        route_over(request, SETTINGS, NOW, labelled, None)


def test_route_applies_limits_regions_max_verdicts_from_its_settings() -> None:
    limits = DEFAULT_LIMITS.override(regions_max_verdicts=10)
    request = RouteRequest(images=(MULTI_ARCH,), arc=True)
    with pytest.raises(LimitExceeded, match=rf"^{MULTI_ARCH}: placing it on linux/amd64 nodes"):
        route_over(request, replace(SETTINGS, limits=limits), NOW, read_needs, None)
