"""`route --format k8s` admits a node exactly when `verify` passes there.

Differential: nodes are built from host readings (the audits verify judges) and labelled as
GPU Feature Discovery labels them (k8s_match.gfd_labels); the affinity is evaluated with the
scheduler's NodeSelectorRequirement semantics (k8s_match.admits). Verify "passes" when its
verdict is not `fail` (exit 0 under the default `fail-on: error`: warnings pass, as they do
for route's runner pools). Hosts that differ only in what no label shows (the GPU brand) are
one node to the scheduler: it must be admitted exactly when verify passes on all of them.

Two sweeps: an exhaustive grid (drivers across branches incl. the knowledge base's exact
floors and a two-part driver, every compute capability the knowledge base names plus one
beyond, brands, amd64/arm64, and images over CUDA releases, arch lists with PTX and
arch-specific targets, platforms, min-driver labels and NVIDIA_REQUIRE_* with brands and
cuda-compat), and a hypothesis search over the same space with device counts, memory and MIG.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from k8s_match import admits, gfd_labels

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.container import (
    ContainerReadings,
    DockerReading,
    SystemReading,
    ToolReading,
)
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.compat.readings import NvmlReadings
from gpuship.compat.verdict import judge
from gpuship.cuda.drivers import cuda_for_driver
from gpuship.cuda.knowledge import knowledge_base
from gpuship.route.kubernetes import node_selector_terms, pod_constraints
from unit.compat.compat_builders import gpu

MIB = 2**20

# Drivers across branches: each branch's first and a late release, the toolkit table's exact
# floors (12.2 GA 535.54.03, 12.4 GA 550.54.14 and 12.4.1's 550.54.15, the 12.x family floor
# 525.60.13) with their neighbours, and 570.26, a two-part driver (GFD: empty revision).
DRIVER_VERSIONS = (
    "450.80.02",
    "470.256.02",
    "525.60.12",
    "525.60.13",
    "525.147.05",
    "535.54.03",
    "535.104.05",
    "535.230.02",
    "545.23.06",
    "550.54.14",
    "550.54.15",
    "550.144.03",
    "560.35.03",
    "570.26",
    "570.195.03",
    "575.57.08",
    "580.65.06",
    "580.95.05",
    "595.45.04",
    "610.43.02",
)
# The CUDA version each driver reports, from the toolkit table (NVML's cudaDriverVersion is
# the newest CUDA the driver runs natively).
CUDA_OF = {driver: str(cuda_for_driver(driver)) for driver in DRIVER_VERSIONS}
# Every compute capability the knowledge base names, one it does not (8.7's neighbour 8.8 is
# a target only) and one beyond every rule (a GPU of the future).
CAPABILITIES = tuple(
    sorted(
        {row.compute_capability for row in knowledge_base().gpus} | {"8.8", "14.0"},
        key=lambda cc: tuple(map(int, cc.split("."))),
    )
)
# Tesla and Nvidia both allow forward compatibility; the stock image names them apart.
BRANDS = ("Nvidia", "GeForce", "Tesla")
MACHINES = ("x86_64", "aarch64")


def host(
    driver: str,
    cc: str,
    *,
    brand: str = "Nvidia",
    machine: str = "x86_64",
    cuda: str | None = None,
    count: int = 1,
    memory_mib: int = 81559,
    mig_slices_mib: Sequence[int] | None = None,
) -> HostAudit:
    """A healthy host (NVIDIA runtime, no CDI spec) with `count` identical GPUs."""
    gpus = [
        gpu(
            index=i,
            name=f"GPU {cc}",
            brand=brand,
            cc=cc,
            memory_gib=memory_mib / 1024,
            mig_slices_gib=None if mig_slices_mib is None else [s / 1024 for s in mig_slices_mib],
        )
        for i in range(count)
    ]
    return HostAudit(
        taken_at="2026-11-29T17:00:00+00:00",
        runner=RunnerIdentity(hostname="node-1"),
        system=SystemReading(kernel="6.8.0", machine=machine),
        nvml=NvmlReadings(
            driver_version=driver,
            cuda_driver_version=cuda or CUDA_OF.get(driver) or str(cuda_for_driver(driver)),
            gpus=gpus,
        ),
        container=ContainerReadings(
            docker=DockerReading(reachable=True, runtimes=["nvidia", "runc"]),
            tools=[ToolReading(name="nvidia-container-runtime-hook", path="/usr/bin/hook")],
        ),
    )


def image(
    cuda: str | None,
    arch: str | None,
    platforms: Sequence[str] = ("linux/amd64",),
    *,
    min_driver: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, ImageGpuNeeds]:
    labels = {}
    if cuda:
        labels["io.gpuship.cuda"] = cuda
    if arch:
        labels["io.gpuship.arch-list"] = arch
    if min_driver:
        labels["io.gpuship.min-driver"] = min_driver
    name = f"app:{cuda}-{arch}-{min_driver}-{'+'.join(platforms)}-{len(env or {})}"
    needs = image_needs(name, dict(env or {}), labels)
    return {platform: needs for platform in platforms}


def passes(audit: HostAudit, needs: Mapping[str, ImageGpuNeeds], config: VerifyConfig) -> bool:
    """verify's verdict on this host (the image read for the host's platform, as docker picks)."""
    platform = "linux/amd64" if audit.system.machine == "x86_64" else "linux/arm64"
    chosen = needs.get(platform)
    if chosen is None:  # the image has no variant for this host: verify fails (verify-platform)
        return False
    return judge(audit, chosen, config).status is not Status.FAIL


def fragment(needs: Mapping[str, ImageGpuNeeds], config: VerifyConfig) -> dict[str, object]:
    terms = node_selector_terms(needs, config)
    return pod_constraints(terms, []) if terms else {}


# A stock nvidia/cuda image: NVIDIA_REQUIRE_CUDA with brand alternatives for older branches,
# and the cuda-compat package (forward compatibility on data-center brands).
STOCK_12_4 = {
    "CUDA_VERSION": "12.4.1",
    "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471 "
    "brand=nvidia,driver>=535,driver<536 brand=geforce,driver>=535,driver<536",
    "NV_CUDA_COMPAT_PACKAGE": "cuda-compat-12-4",
}
BOTH = ("linux/amd64", "linux/arm64")
GRID_IMAGES = [
    *(
        image(cuda, arch, BOTH)
        for cuda, arch in itertools.product(
            ("11.8.0", "12.2.2", "12.4.0", "12.4.1", "12.8.1", "13.0.2", "12.99", "14.1"),
            (None, "8.0;9.0", "7.5;8.0;8.6+PTX", "9.0a;10.0", "12.0+PTX"),
        )
    ),
    image("12.4.1", "8.0;9.0", ("linux/amd64",)),
    image("12.8.1", "9.0;10.0+PTX", ("linux/arm64",)),
    image("12.4.1", "8.0;9.0", min_driver="570.86.10"),  # a cell that raises its driver
    image("12.4.1", "8.0;9.0", min_driver="550.54.15"),  # as the matrix writes it
    image("14.1", "9.0", min_driver="600.1"),  # unknown family: only the label decides
    image(None, "8.9", min_driver="560.35.03"),
    image(None, "8.0+PTX", env=STOCK_12_4),
    image(None, None, env={"CUDA_VERSION": "12.2.2", "NVIDIA_REQUIRE_ARCH": "arch>=8.0"}),
]
GRID_CONFIGS = {
    "default": VerifyConfig(),
    "minor-compat-error": VerifyConfig(minor_version_compat="error"),
    "ptx-jit-error": VerifyConfig(ptx_jit="error"),
    "forward-compat-error": VerifyConfig(forward_compat="error"),
}
# The whole grid under the default settings; each other setting changes how the driver and
# architecture checks read, so it gets every driver and capability on amd64 hosts.
GRID_HOSTS = {
    "default": [
        host(driver, cc, brand=brand, machine=machine)
        for driver, cc, brand, machine in itertools.product(
            DRIVER_VERSIONS, CAPABILITIES, BRANDS, MACHINES
        )
    ],
    "other": [
        host(driver, cc, brand=brand)
        for driver, cc, brand in itertools.product(DRIVER_VERSIONS, CAPABILITIES, BRANDS)
    ],
}


def _label_key(audit: HostAudit) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(gfd_labels(audit).items()))


def _nodes(hosts: Sequence[HostAudit]) -> dict[tuple[tuple[str, str], ...], list[HostAudit]]:
    """Hosts grouped by their labels: one node each to the scheduler."""
    nodes: dict[tuple[tuple[str, str], ...], list[HostAudit]] = {}
    for audit in hosts:
        nodes.setdefault(_label_key(audit), []).append(audit)
    return nodes


NODES = {name: _nodes(hosts) for name, hosts in GRID_HOSTS.items()}


@pytest.mark.parametrize("config_name", list(GRID_CONFIGS))
def test_every_grid_node_is_admitted_exactly_when_verify_passes(config_name: str) -> None:
    config = GRID_CONFIGS[config_name]
    grid = "default" if config_name == "default" else "other"
    compared = admitted = brand_split = 0
    for needs in GRID_IMAGES:
        affinity = fragment(needs, config)
        for key, hosts in NODES[grid].items():
            verdicts = [passes(h, needs, config) for h in hosts]
            node = admits(affinity, dict(key))
            case = f"{next(iter(needs.values())).reference} on {dict(key)}: {verdicts}"
            assert node == all(verdicts), case
            compared += len(hosts)
            admitted += node
            brand_split += any(verdicts) and not all(verdicts)
    # default: 46 images x 1,800 hosts (20 drivers x 15 capabilities x 3 brands x 2 arches)
    assert compared == len(GRID_IMAGES) * len(GRID_HOSTS[grid])
    assert 0 < admitted < compared / len(BRANDS)  # the sweep has both answers
    assert brand_split > 0  # and nodes where only the brand decides (forward compatibility)


def test_an_amd64_image_is_not_admitted_on_an_arm64_gh200_node_and_the_reverse() -> None:
    config = VerifyConfig()
    gh200 = gfd_labels(host("570.195.03", "9.0", machine="aarch64"))
    h100 = gfd_labels(host("570.195.03", "9.0", machine="x86_64"))
    amd64 = fragment(image("12.4.1", "9.0", ("linux/amd64",)), config)
    arm64 = fragment(image("12.4.1", "9.0", ("linux/arm64",)), config)
    both = fragment(image("12.4.1", "9.0", ("linux/amd64", "linux/arm64")), config)
    assert (admits(amd64, gh200), admits(amd64, h100)) == (False, True)
    assert (admits(arm64, gh200), admits(arm64, h100)) == (True, False)
    assert admits(both, gh200) and admits(both, h100)


@pytest.mark.parametrize(
    ("cuda", "driver"), [("12.4.1", "550.54.14"), ("12.2.2", "535.54.03"), ("12.4.1", "535.54.03")]
)
def test_the_driver_floor_is_verifys(cuda: str, driver: str) -> None:
    # 12.4.1 on 550.54.14 and 12.2.2 on 535.54.03 run natively (the driver reports that CUDA);
    # 12.4.1 on 535 runs through minor-version compatibility, which verify passes with a warning.
    needs = image(cuda, "9.0")
    node = host(driver, "9.0")
    assert judge(node, needs["linux/amd64"], VerifyConfig()).status is not Status.FAIL
    assert admits(fragment(needs, VerifyConfig()), gfd_labels(node))


def test_a_min_driver_above_the_cudas_is_enforced() -> None:
    needs = image("12.4.1", "9.0", min_driver="570.86.10")
    for driver, runs in (("560.35.03", False), ("570.86.10", True), ("570.195.03", True)):
        node = host(driver, "9.0")
        verdict = judge(node, needs["linux/amd64"], VerifyConfig())
        assert (verdict.status is not Status.FAIL) is runs, verdict.reason
        assert admits(fragment(needs, VerifyConfig()), gfd_labels(node)) is runs


# -- a random search over the whole space, devices and verify: settings included -----------

_KB_CUDAS = sorted({row.version for row in knowledge_base().toolkits})
_TARGETS = ("7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "9.0a", "10.0", "10.0f", "12.0")


@st.composite
def _driver(draw: st.DrawFn) -> str:
    major = draw(st.integers(440, 620))
    minor = draw(st.integers(0, 200))
    if draw(st.booleans()):
        return f"{major}.{minor:02d}"
    return f"{major}.{minor:02d}.{draw(st.integers(0, 20)):02d}"


@st.composite
def _arch_list(draw: st.DrawFn) -> str | None:
    if draw(st.integers(0, 5)) == 0:
        return None
    targets = draw(st.lists(st.sampled_from(_TARGETS), min_size=1, max_size=4, unique=True))
    return ";".join(t + ("+PTX" if draw(st.booleans()) else "") for t in targets)


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[HostAudit], dict[str, ImageGpuNeeds], VerifyConfig]:
    driver = draw(st.one_of(st.sampled_from(DRIVER_VERSIONS), _driver()))
    cuda = draw(
        st.one_of(st.just(None), st.sampled_from([str(cuda_for_driver(driver) or "11.0")]),
                  st.sampled_from(["11.4", "12.0", "12.2", "12.4", "12.8", "13.0", "13.2"]))
    )  # fmt: skip
    cc = draw(st.sampled_from([*CAPABILITIES, "8.1", "9.9", "12.1", "15.3"]))
    count = draw(st.integers(1, 3))
    memory = draw(st.sampled_from([15360, 23028, 40960, 81559, 143771]))
    mig = draw(st.sampled_from([None, (), (9728, 9728), (19968, 19968, 19968)]))
    machine = draw(st.sampled_from(MACHINES))
    hosts = [
        host(driver, cc, brand=brand, machine=machine, cuda=cuda, count=count,
             memory_mib=memory, mig_slices_mib=mig)
        for brand in knowledge_base().brands.names
    ]  # fmt: skip
    platforms = draw(
        st.sampled_from([("linux/amd64",), ("linux/arm64",), ("linux/amd64", "linux/arm64")])
    )
    env: dict[str, str] = {}
    if draw(st.booleans()):
        env = dict(STOCK_12_4)
    needs = image(
        draw(st.one_of(st.none(), st.sampled_from(_KB_CUDAS), st.sampled_from(["12.10", "15.0"]))),
        draw(_arch_list()),
        platforms,
        min_driver=draw(st.one_of(st.none(), _driver())),
        env=env,
    )
    config = VerifyConfig(
        gpus=draw(st.integers(1, 4)),
        min_memory_gib=draw(st.sampled_from([None, 9.5, 16, 22.49, 40, 79.6, 80])),
        mig=draw(st.sampled_from(["allow", "forbid", "require"])),
        minor_version_compat=draw(st.sampled_from(["warn", "error"])),
        forward_compat=draw(st.sampled_from(["allow", "error"])),
        ptx_jit=draw(st.sampled_from(["warn", "error"])),
    )
    return hosts, needs, config


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_random_nodes_are_admitted_exactly_when_verify_passes(
    case: tuple[list[HostAudit], dict[str, ImageGpuNeeds], VerifyConfig],
) -> None:
    hosts, needs, config = case
    labels = gfd_labels(hosts[0])
    assert all(gfd_labels(h) == labels for h in hosts)  # brands are one node to the scheduler
    verdicts = [passes(h, needs, config) for h in hosts]
    assert admits(fragment(needs, config), labels) == all(verdicts), (labels, verdicts)
