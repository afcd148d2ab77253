"""Differential: `fleet plan`'s "after" equals what `route` and `fleet` say on audits and images
changed that way by hand, over random fleets, images and changes (hypothesis).

The hand edit is the test's own: a driver change writes the driver and the CUDA version NVML
reports for it (the table below, not the knowledge base's lookup), a retired GPU model removes
the GPUs of that exact name, a retired host its audit, and a CUDA variant is relabelled with
the release's minimum driver and the GPU targets its nvcc still compiles (tables below).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.compat.audit import HostAudit
from gpuship.compat.config import VerifyConfig
from gpuship.compat.fleet import build_fleet, runner_names
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.cuda.version import Version
from gpuship.registry.access import RegistryAccess
from gpuship.route.config import RouteConfig
from gpuship.route.inventory import Inventory, InventoryEntry
from gpuship.route.plan import Change, plan_change
from gpuship.route.routing import ImageToRoute, fleet_hosts
from gpuship.route.run import RouteRequest, Settings, route_over
from unit.compat.compat_builders import A100, H100, L4, T4, audit, gpu

NOW = datetime(2026, 11, 29, 17, 30, tzinfo=timezone.utc)
SETTINGS = settings(
    max_examples=int(os.environ.get("GPUSHIP_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
V100 = {"name": "Tesla V100-SXM2-32GB", "brand": "Nvidia", "cc": "7.0", "memory_gib": 32}
GPUS = {"T4": T4, "A100": A100, "H100": H100, "L4": L4, "V100": V100}
BRANCHES = (470, 525, 535, 550, 570, 580)
# Driver -> the CUDA version NVML reports for it (the toolkit table, cuda-compat.md §1.1).
NVML_CUDA = {
    "470.256.02": "11.4",
    "525.147.05": "12.0",
    "535.230.02": "12.2",
    "550.144.03": "12.4",
    "570.195.03": "12.8",
    "580.95.05": "13.0",
    "590.44.01": "13.1",
}
# CUDA release of a new variant -> its minimum driver, and the SM targets its nvcc dropped.
VARIANTS = {"12.8": ("570.26", ()), "13.0": ("580.65.06", ("7.0",))}
POOLS = ("gpu-a", "gpu-b", "gpu-c")
ARCH_LISTS = ("7.0;7.5;8.0", "8.0;9.0", "7.5;8.0;8.6;8.9;9.0+PTX")
CUDAS = ("11.8", "12.2", "12.4", "12.8", "13.0")


@st.composite
def fleets(draw: st.DrawFn) -> list[HostAudit]:
    count = draw(st.integers(1, 6))
    hosts = []
    for i in range(count):
        models = draw(st.lists(st.sampled_from(sorted(GPUS)), min_size=1, max_size=2))
        labels = draw(st.lists(st.sampled_from(POOLS), min_size=1, max_size=2, unique=True))
        host = audit(
            draw(st.sampled_from(BRANCHES)),
            [gpu(index=n, **GPUS[m]) for n, m in enumerate(models)],  # type: ignore[arg-type]
            labels=labels,
        )
        runner = host.runner.model_copy(
            update={"hostname": f"host-{i}", "runner_name": f"host-{i}"}
        )
        hosts.append(host.model_copy(update={"runner": runner}))
    return hosts


def _labels(cuda: str, arch: str) -> dict[str, str]:
    return {"io.gpuship.cuda": cuda, "io.gpuship.arch-list": arch}


images_in_use = st.lists(
    st.tuples(st.sampled_from(CUDAS), st.sampled_from(ARCH_LISTS)), min_size=1, max_size=3
)


@st.composite
def changes(draw: st.DrawFn, hosts: list[HostAudit]) -> Change:
    pools = sorted({label for h in hosts for label in h.runner.labels})
    drivers = draw(
        st.lists(st.tuples(st.sampled_from(pools), st.sampled_from(sorted(NVML_CUDA))), max_size=2)
    )
    cuda = draw(st.lists(st.sampled_from(sorted(VARIANTS)), max_size=1))
    names = [h.runner.hostname for h in hosts]
    models = sorted(
        {m for h in hosts for m in GPUS if any(g.name == GPUS[m]["name"] for g in h.nvml.gpus)}
    )
    retire = draw(st.lists(st.sampled_from([*names, *models]), max_size=1))
    return Change(
        drivers=tuple((pool, Version.parse(driver)) for pool, driver in drivers),
        cuda=tuple((None, Version.parse(c)) for c in cuda),
        retire=tuple(retire),
    )


def hand_edited(hosts: list[HostAudit], change: Change) -> list[HostAudit]:
    """The audits as the change leaves them, edited as documents."""
    edited = []
    for host in hosts:
        document: dict[str, Any] = host.model_dump(mode="json")
        if host.runner.hostname in change.retire:
            continue
        for pool, driver in change.drivers:
            if pool in document["runner"]["labels"]:
                document["nvml"]["driver_version"] = str(driver)
                document["nvml"]["cuda_driver_version"] = NVML_CUDA[str(driver)]
        retired_names = {GPUS[m]["name"] for m in change.retire if m in GPUS}
        document["nvml"]["gpus"] = [
            g for g in document["nvml"]["gpus"] if g["name"] not in retired_names
        ]
        if document["nvml"]["gpus"]:
            edited.append(HostAudit.model_validate(document))
    return edited


def variant_labels(cuda: str, arch: str, new: str) -> dict[str, str]:
    min_driver, dropped = VARIANTS[new]
    kept = ";".join(t for t in arch.split(";") if t not in dropped)
    labels = {"io.gpuship.cuda": new, "io.gpuship.min-driver": min_driver}
    if kept:
        labels["io.gpuship.arch-list"] = kept
    return labels


@SETTINGS
@given(data=st.data(), hosts=fleets(), used=images_in_use)
def test_plan_after_equals_route_and_fleet_on_the_changed_fleet(
    data: st.DataObject, hosts: list[HostAudit], used: list[tuple[str, str]]
) -> None:
    change = data.draw(changes(hosts))
    if not change.describe():
        return
    needs = {
        f"app:{i}": image_needs(f"app:{i}", {}, _labels(c, a)) for i, (c, a) in enumerate(used)
    }
    images = [ImageToRoute(name, {"linux/amd64": n}) for name, n in needs.items()]
    plan = plan_change(
        fleet_hosts([(h, NOW) for h in hosts], NOW, RouteConfig().max_age),
        images,
        change,
        VerifyConfig(),
        RouteConfig(),
    )
    # The same images, and each variant, as the registry would give them after the change.
    after_needs: dict[str, ImageGpuNeeds] = dict(needs)
    for _, new in change.cuda:
        for i, (c, a) in enumerate(used):
            name = f"app:{i}+cuda{new}"
            after_needs[name] = image_needs(name, {}, variant_labels(c, a, str(new)))
    changed = hand_edited(hosts, change)
    if not changed:
        assert plan.losing_every_host == tuple(
            r.image.name for r in plan.before.routes if r.chosen is not None
        )
        return

    def read_needs(reference: str, platform: str) -> ImageGpuNeeds:
        return after_needs[reference]

    inventory = Inventory(
        "registry.example/fleet",
        tuple(InventoryEntry(h.runner.hostname, "sha256:0", h) for h in changed),
    )
    settings_ = Settings(verify=VerifyConfig(), route=RouteConfig(), access=RegistryAccess())
    request = RouteRequest(images=tuple(after_needs), fleet=inventory.repository)
    routed = route_over(request, settings_, NOW, read_needs, inventory).result
    for image in routed.images:  # type: ignore[union-attr]
        for pool, result in image.pools.items():
            state = plan.state(plan.after, image.name, pool)
            assert (state.status in ("ok", "warn")) == result.runs, (image.name, pool)
            if not result.runs:
                assert state.why == result.reason
    # Pools the change empties are unknown in the plan and absent from route.
    for pool in set(plan.pools) - set(routed.pools):  # type: ignore[union-attr]
        assert {plan.state(plan.after, i, pool).status for i in plan.images} == {"unknown"}
    fleet = build_fleet(changed, list(after_needs.values()), VerifyConfig())
    hostname = dict(zip(runner_names(changed), (h.runner.hostname for h in changed), strict=True))
    per_host = {
        (route.image.name, v.host.name): v.status.value
        for route in plan.after.routes
        for pool in route.pools
        for v in pool.verdicts
    }
    for cell in fleet.cells:
        assert per_host[(cell.image, hostname[cell.runner])] == cell.verdict.status.value
