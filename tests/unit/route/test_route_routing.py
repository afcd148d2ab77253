"""Routing on data: pools from labels, split pools named with the host, stale and missing
audits under both policies, arm64 and MIG pools, and verify's own verdict per host."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import image_needs
from gpuship.compat.verdict import judge
from gpuship.route.config import RouteConfig
from gpuship.route.inventory import entry_tag
from gpuship.route.report import route_findings, route_outputs, route_result
from gpuship.route.routing import FleetHost, ImageToRoute, fleet_hosts, host_platform, route_images
from unit.compat.compat_builders import A100, H100, T4, audit, gpu

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
CONFIG = VerifyConfig(require_gpu_runtime=False, minor_version_compat="error")


def runner(
    branch: int, gpus: list, name: str, labels: list[str], machine: str = "x86_64"
) -> HostAudit:
    host = audit(branch, gpus, labels=labels)
    return host.model_copy(
        update={
            "runner": RunnerIdentity(hostname=f"{name}.lan", runner_name=name, labels=labels),
            "system": host.system.model_copy(update={"machine": machine}),
        }
    )


def image(cuda: str, arch: str, platforms: tuple[str, ...] = ("linux/amd64",)) -> ImageToRoute:
    needs = image_needs(
        f"app-cu{cuda}", {}, {"io.gpuship.cuda": cuda, "io.gpuship.arch-list": arch}
    )
    return ImageToRoute(needs.reference, {p: needs for p in platforms})


FLEET = [
    runner(470, [gpu(**T4)], "t4-1", ["gpu-t4"]),  # a pool on an old driver
    runner(550, [gpu(**A100)], "a100-1", ["gpu-a100"]),
    runner(535, [gpu(**A100)], "a100-2", ["gpu-a100"]),  # splits gpu-a100 for CUDA 12.4
    runner(570, [gpu(**H100)], "h100-1", ["gpu-h100"]),
    runner(570, [gpu(**H100)], "h100-2", ["gpu-h100"]),
    runner(570, [gpu(**H100)], "gh200-1", ["gpu-gh200"], machine="aarch64"),
    runner(570, [gpu(**A100, mig_slices_gib=[9.75, 9.75])], "mig-1", ["gpu-a100-mig"]),
]


def hosts(
    audits: list[HostAudit], ages: dict[str, timedelta] | None = None
) -> tuple[FleetHost, ...]:
    ages = ages or {}
    pairs = [(a, NOW - ages.get(a.runner.runner_name or "", timedelta(minutes=5))) for a in audits]
    return fleet_hosts(pairs, NOW, RouteConfig().max_age)


def test_each_host_gets_the_verdict_verify_gives_on_it() -> None:
    routed = route_images(hosts(FLEET), [image("12.4", "8.0;9.0")], CONFIG, RouteConfig())
    (route,) = routed.routes
    compared = 0
    for pool in route.pools:
        for verdict in pool.verdicts:
            needs = route.image.needs.get(verdict.host.platform)
            if needs is None:  # an arm64 host and an amd64-only image: refused before verify
                assert not verdict.runs and "built for linux/amd64" in verdict.reason
                continue
            expected = judge(verdict.host.audit, needs, CONFIG)
            assert verdict.runs is (expected.status is not Status.FAIL)
            assert verdict.reason == expected.reason
            compared += 1
    assert compared == len(FLEET) - 1


def test_hosts_differing_only_in_gpu_identity_are_judged_once_per_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real hosts of one pool never read alike: each GPU has its own UUID and PCI address,
    and free memory differs. Routing judges each kind of host once per image all the same."""
    pool = []
    for n in range(5):
        host = runner(550, [gpu(**A100, free_gib=70 + n)], f"a100-{n}", ["gpu-a100"])
        reading = host.nvml.gpus[0].model_copy(
            update={"uuid": f"GPU-{n:08x}-1111-2222-3333-444444444444", "pci_bus_id": f"0:{n}"}
        )
        pool.append(
            host.model_copy(update={"nvml": host.nvml.model_copy(update={"gpus": [reading]})})
        )
    calls = []

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return judge(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("gpuship.route.routing.judge", counted)
    images = [image("12.4", "8.0;9.0"), image("12.8", "8.0")]
    routed = route_images(hosts(pool), images, CONFIG, RouteConfig())
    assert len(calls) == len(images)
    assert [r.pools[0].runs for r in routed.routes] == [True, False]
    assert all(len(r.pools[0].verdicts) == 5 for r in routed.routes)


def test_pools_split_pools_arm64_and_mig() -> None:
    images = [image("12.4", "8.0;9.0"), image("12.8", "9.0", ("linux/amd64", "linux/arm64"))]
    routed = route_images(hosts(FLEET), images, CONFIG, RouteConfig())
    cu124, cu128 = routed.routes
    # The H100 pool has most hosts, so it comes first among the pools that can run an image.
    assert cu124.runnable_pools == ("gpu-h100", "gpu-a100-mig")
    assert cu124.chosen == "gpu-h100"
    a100 = next(p for p in cu124.pools if p.pool == "gpu-a100")
    assert a100.split and [v.host.name for v in a100.failing] == ["a100-2"]
    assert "older than CUDA 12.4" in a100.failing[0].reason
    # sm_90 only: not the A100s or their MIG slices; arm64 hosts need an arm64 build.
    assert cu128.runnable_pools == ("gpu-h100", "gpu-gh200")
    arm = next(p for p in cu124.pools if p.pool == "gpu-gh200")
    assert "linux/arm64 host, but the image is built for linux/amd64" in arm.reason()
    findings = route_findings(routed, RouteConfig())
    split = [f for f in findings if f.rule == "GSQ102"]
    assert (
        len(split) == 1 and "a100-2" in split[0].message and "take them out of pool" in split[0].fix
    )
    assert not [f for f in findings if f.rule == "GSQ101"]


def test_a_label_every_runner_shares_gives_one_split_warning_not_one_per_host_and_image() -> None:
    # 40 runners all labelled `linux` (half on an old driver) and 25 images: the shared label
    # is split for every image, and says so once.
    fleet = [
        runner(550 if n % 2 else 470, [gpu(**A100)], f"a100-{n}", ["linux", f"gpu-{n % 2}"])
        for n in range(40)
    ]
    images = [image("12.4", "8.0;9.0")] * 25
    findings = route_findings(
        route_images(hosts(fleet), images, CONFIG, RouteConfig()), RouteConfig()
    )
    split = [f for f in findings if f.rule == "GSQ102"]
    assert len(split) == 1
    assert split[0].message.startswith("pool linux is split for 25 image(s)")
    assert "20 of its 40 host(s) cannot run them (a100-0, a100-10, a100-12 and 17 more)" in (
        split[0].message
    )


def test_runners_without_labels_are_named_once() -> None:
    fleet = [
        *FLEET,
        runner(550, [gpu(**A100)], "bare-1", []),
        runner(550, [gpu(**A100)], "bare-2", []),
    ]
    findings = route_findings(
        route_images(hosts(fleet), [image("12.4", "8.0;9.0")], CONFIG, RouteConfig()), RouteConfig()
    )
    (unlabelled,) = [f for f in findings if f.rule == "GSQ204"]
    assert "2 runner(s) published an audit without labels and are in no pool: bare-1, bare-2" in (
        unlabelled.message
    )


def test_mig_slices_too_small_keep_the_mig_pool_out() -> None:
    config = CONFIG.model_copy(update={"min_memory_gib": 16.0})
    routed = route_images(hosts(FLEET), [image("12.4", "8.0;9.0")], config, RouteConfig())
    mig = next(p for p in routed.routes[0].pools if p.pool == "gpu-a100-mig")
    assert not mig.runs and "smallest MIG device has 9.8 GiB" in mig.reason()


def test_an_image_no_pool_can_run_fails_with_every_pool_reason() -> None:
    routed = route_images(hosts(FLEET), [image("13.0", "10.0")], CONFIG, RouteConfig())
    findings = route_findings(routed, RouteConfig())
    (unroutable,) = [f for f in findings if f.rule == "GSQ101"]
    assert unroutable.severity.value == "error"
    for pool in ("gpu-t4", "gpu-a100", "gpu-h100", "gpu-gh200", "gpu-a100-mig"):
        assert f"{pool}: " in unroutable.message
    assert json.loads(route_outputs(routed, RouteConfig(), {})["unroutable"]) == ["app-cu13.0"]


@pytest.mark.parametrize("policy", ["unknown", "fail"])
def test_stale_and_missing_audits_under_each_policy(policy: str) -> None:
    config = RouteConfig(pools=["gpu-h100", "gpu-l4"], stale_audits=policy, max_audit_age="6h")
    stale = hosts(FLEET, {"h100-2": timedelta(hours=30)})
    stale = fleet_hosts([(h.audit, NOW - h.age) for h in stale], NOW, config.max_age)
    routed = route_images(stale, [image("12.4", "8.0;9.0")], CONFIG, config)
    h100 = routed.routes[0].pools[0]
    assert [h.name for h in h100.unknown] == ["h100-2"] and h100.runs
    assert routed.missing_pools == ("gpu-l4",)
    findings = route_findings(routed, config)
    severities = {f.rule: f.severity.value for f in findings}
    expected = "error" if policy == "fail" else "warning"
    assert severities["GSQ201"] == expected and severities["GSQ202"] == expected
    (stale_finding,) = [f for f in findings if f.rule == "GSQ201"]
    assert "h100-2" in stale_finding.message and "30.0h old" in stale_finding.message


def test_a_pool_of_only_stale_hosts_cannot_be_routed_to() -> None:
    only = [runner(570, [gpu(**H100)], "h100-1", ["gpu-h100"])]
    routed = route_images(
        hosts(only, {"h100-1": timedelta(days=3)}), [image("12.4", "9.0")], CONFIG, RouteConfig()
    )
    assert routed.routes[0].chosen is None
    assert routed.routes[0].pools[0].reason() == "no host with a fresh audit"


def test_outputs_feed_runs_on_and_a_strategy_matrix() -> None:
    config = RouteConfig(runs_on=["self-hosted", "linux"])
    routed = route_images(hosts(FLEET), [image("12.4", "8.0;9.0")], CONFIG, config)
    outputs = route_outputs(routed, config, {"app-cu12.4": "reg/app@sha256:abc"})
    assert json.loads(outputs["matrix"]) == {
        "include": [
            {
                "name": "app-cu12.4",
                "image": "reg/app@sha256:abc",
                "pool": "gpu-h100",
                "runs-on": ["self-hosted", "linux", "gpu-h100"],
            }
        ]
    }
    assert json.loads(outputs["runs-on"]) == {"app-cu12.4": ["self-hosted", "linux", "gpu-h100"]}
    result = route_result(routed, config, "reg/fleet")
    assert result.images[0].pools["gpu-a100"].split is True


def test_configured_pool_order_is_the_preference() -> None:
    config = RouteConfig(pools=["gpu-a100-mig", "gpu-h100"])
    routed = route_images(hosts(FLEET), [image("12.4", "8.0;9.0")], CONFIG, config)
    assert routed.routes[0].chosen == "gpu-a100-mig"


def test_each_runner_has_its_own_stable_entry_tag() -> None:
    a = RunnerIdentity(hostname="gpu-1", runner_name="r1")
    assert entry_tag(a) == entry_tag(a.model_copy(update={"labels": ["x"]}))
    assert entry_tag(a) != entry_tag(RunnerIdentity(hostname="gpu-1", runner_name="r2"))
    assert entry_tag(a).startswith("runner-") and len(entry_tag(a)) == len("runner-") + 24


def test_host_platforms() -> None:
    assert host_platform(FLEET[0]) == "linux/amd64"
    assert host_platform(FLEET[5]) == "linux/arm64"


def test_hosts_are_listed_by_name_not_in_inventory_order() -> None:
    """The inventory lists entries by their tags (hashes of the runner names): reports list
    a pool's hosts by name instead."""
    fleet = [runner(570, [gpu(**H100)], f"h100-{n}", ["gpu-h100"]) for n in (3, 1, 2)]
    routed = route_images(hosts(fleet), [image("12.4", "9.0")], CONFIG, RouteConfig())
    result = route_result(routed, RouteConfig(), "reg/fleet", None)
    assert list(result.images[0].pools["gpu-h100"].hosts) == ["h100-1", "h100-2", "h100-3"]
