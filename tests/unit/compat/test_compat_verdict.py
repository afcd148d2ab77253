"""Verdict tables on data: host readings x image needs x config -> per-check outcomes."""

from __future__ import annotations

from typing import Any

import pytest
from compat_builders import A100, H100, H200, L4, RTX3090, RTX4090, T4, audit, gpu, image
from require_values import IMAGES, require_cuda

from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Check, Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageScan, image_needs
from gpuship.compat.verdict import Verdict, judge
from gpuship.errors import InputError
from gpuship.image_result import CudaEvidence

DEFAULT = VerifyConfig()


def checks_of(verdict: Verdict, rule: str) -> list[Check]:
    return [c for c in verdict.checks if c.rule == rule]


def only(verdict: Verdict, rule: str) -> Check:
    found = checks_of(verdict, rule)
    assert len(found) == 1, found
    return found[0]


def one_gpu(branch: int, model: dict[str, Any]) -> HostAudit:
    return audit(branch, [gpu(**model)])


# (image, host branch, GPU, driver status, NVIDIA_REQUIRE status), derived from
# cuda-compat.md §1.2-1.4 (MVC floors 450.80.02 / 525.60.13 / 580, forward compat for
# datacenter brands with cuda-compat) and the §2.6 requirement values.
DRIVER_AND_REQUIRE_TABLE = [
    # native: host CUDA >= image CUDA
    ("11.8", 550, A100, Status.OK, Status.OK),
    ("12.4.1", 550, L4, Status.OK, Status.OK),
    ("12.4.1", 550, RTX4090, Status.OK, Status.OK),
    ("13.0", 580, H200, Status.OK, Status.OK),
    ("12.8", 570, H100, Status.OK, Status.OK),
    # minor-version compatibility: same major, driver >= family floor -> warn;
    # the image's branch terms admit the container
    ("11.8", 470, T4, Status.WARN, Status.OK),
    ("12.4.1", 535, A100, Status.WARN, Status.OK),
    ("12.4.1", 525, A100, Status.WARN, Status.OK),
    ("12.8", 535, H100, Status.WARN, Status.OK),
    # MVC would run, but the image's requirement lists no 525 branch: legacy runtime refuses
    ("12.8", 525, A100, Status.WARN, Status.FAIL),
    # 12.6+ images dropped GeForce from the compat terms: refused on a 550 GeForce host
    ("12.6.3", 550, RTX4090, Status.WARN, Status.FAIL),
    # forward compatibility: datacenter GPU, older major, cuda-compat in the image
    ("12.4.1", 470, T4, Status.NOTE, Status.OK),
    ("12.6.3", 470, T4, Status.NOTE, Status.OK),
    ("13.0", 570, H100, Status.NOTE, Status.OK),
    ("13.0", 550, A100, Status.NOTE, Status.OK),
    ("13.0", 525, A100, Status.NOTE, Status.FAIL),
    # GeForce cannot use forward compatibility
    ("13.0", 550, RTX4090, Status.FAIL, Status.FAIL),
]


@pytest.mark.parametrize(
    ("image_key", "branch", "model", "driver_status", "require_status"), DRIVER_AND_REQUIRE_TABLE
)
def test_driver_and_require_table(
    image_key: str,
    branch: int,
    model: dict[str, Any],
    driver_status: Status,
    require_status: Status,
) -> None:
    verdict = judge(one_gpu(branch, model), image(IMAGES[image_key]), DEFAULT)
    assert only(verdict, rules.DRIVER).status is driver_status
    assert only(verdict, rules.REQUIRE).status is require_status
    expected = max((driver_status, require_status), key=lambda s: s.rank)
    assert verdict.status is (Status.OK if expected is Status.NOTE else expected)


def test_geforce_on_old_branch_fails_even_though_a_compat_term_admits_it() -> None:
    # 12.4.1 lists brand=geforce,driver>=470,driver<471: the runtime starts the container,
    # but forward compatibility is not available on GeForce (CUDA error 804).
    verdict = judge(one_gpu(470, RTX3090), image(IMAGES["12.4.1"]), DEFAULT)
    assert only(verdict, rules.REQUIRE).status is Status.OK
    driver = only(verdict, rules.DRIVER)
    assert driver.status is Status.FAIL
    assert "804" in driver.message
    assert driver.fix is not None
    assert "550.54" in driver.fix  # the 12.4 driver row to install
    assert "branch R550" in driver.fix
    assert "exclude this runner label" in driver.fix
    assert verdict.status is Status.FAIL


def test_failed_requirement_names_terms_and_the_cli_message() -> None:
    verdict = judge(one_gpu(525, A100), image(IMAGES["12.8"]), DEFAULT)
    check = only(verdict, rules.REQUIRE)
    assert "NVIDIA_REQUIRE_CUDA" in check.message
    assert "cuda>=12.8 but host has 12.0" in check.message
    assert (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please "
        "update your driver to a newer version, or use an earlier cuda container"
    ) in check.message
    assert check.subject.startswith("GPU 0")
    assert check.fix is not None
    assert "570." in check.fix  # driver row for CUDA 12.8
    assert "CUDA <= 12.0" in check.fix


@pytest.mark.parametrize(
    ("toolkit", "says"),
    [
        ("1.19.1", "defaults to jit-cdi mode, which does not check it"),
        ("1.17.8", "in legacy mode the container is refused"),
        (None, "in CDI mode it starts"),
    ],
)
def test_require_failure_says_what_this_hosts_runtime_will_do(
    toolkit: str | None, says: str
) -> None:
    host = audit(525, [gpu(**A100)], toolkit_version=toolkit)
    check = only(judge(host, image(IMAGES["12.8"]), DEFAULT), rules.REQUIRE)
    assert check.status is Status.FAIL
    assert says in check.message


def test_legacy_cuda_version_image_implies_cuda_requirement() -> None:
    verdict = judge(one_gpu(535, A100), image({"CUDA_VERSION": "12.4.1"}), DEFAULT)
    check = only(verdict, rules.REQUIRE)
    assert check.status is Status.FAIL
    assert "CUDA_VERSION" in check.message


def test_disabled_requirements_are_a_note_and_the_driver_is_still_checked() -> None:
    env = {**IMAGES["13.0"], "NVIDIA_DISABLE_REQUIRE": "true"}
    verdict = judge(one_gpu(550, RTX4090), image(env), DEFAULT)
    assert only(verdict, rules.REQUIRE).status is Status.NOTE
    assert only(verdict, rules.DRIVER).status is Status.FAIL


def test_invalid_requirement_expression_fails_the_require_check() -> None:
    verdict = judge(one_gpu(550, A100), image({"NVIDIA_REQUIRE_CUDA": "cuda==12.4"}), DEFAULT)
    check = only(verdict, rules.REQUIRE)
    assert check.status is Status.FAIL
    assert "invalid expression" in check.message


def test_requirement_evaluated_per_gpu_names_the_failing_gpu() -> None:
    env = {"NVIDIA_REQUIRE_ARCH": "arch>=8.0"}
    host = audit(535, [gpu(0, **A100), gpu(1, **T4)])
    check = only(judge(host, image(env), DEFAULT), rules.REQUIRE)
    assert check.status is Status.FAIL
    assert check.subject.startswith("GPU 1 (Tesla T4)")


def test_image_without_cuda_skips_driver_and_require_checks() -> None:
    verdict = judge(one_gpu(550, A100), image({"PATH": "/usr/bin"}), DEFAULT)
    assert only(verdict, rules.DRIVER).status is Status.SKIP
    assert only(verdict, rules.REQUIRE).status is Status.SKIP
    assert verdict.status is Status.OK


def test_label_states_cuda_over_env() -> None:
    # A cu128 torch wheel in a 12.4 base: the build stage's label says 12.8.
    labels = {"io.gpuship.cuda": "12.8"}
    verdict = judge(one_gpu(550, A100), image(IMAGES["12.4.1"], labels), DEFAULT)
    driver = only(verdict, rules.DRIVER)
    assert driver.status is Status.WARN
    assert "label io.gpuship.cuda" in driver.message


def test_minor_version_compat_can_be_made_an_error() -> None:
    config = VerifyConfig(minor_version_compat="error")
    verdict = judge(one_gpu(535, A100), image(IMAGES["12.4.1"]), config)
    assert only(verdict, rules.DRIVER).status is Status.FAIL


def test_forward_compat_can_be_forbidden() -> None:
    config = VerifyConfig(forward_compat="error")
    verdict = judge(one_gpu(570, H100), image(IMAGES["13.0"]), config)
    assert only(verdict, rules.DRIVER).status is Status.FAIL


def test_unknown_cuda_falls_back_to_the_min_driver_label() -> None:
    labels = {"io.gpuship.cuda": "99.1", "io.gpuship.min-driver": "999.1"}
    check = only(judge(one_gpu(580, H200), image(labels=labels), DEFAULT), rules.DRIVER)
    assert check.status is Status.FAIL
    assert "999.1" in check.message
    no_label = only(
        judge(one_gpu(580, H200), image(labels={"io.gpuship.cuda": "99.1"}), DEFAULT),
        rules.DRIVER,
    )
    assert no_label.status is Status.WARN


# -- architecture ---------------------------------------------------------------------------

ARCH_TABLE = [
    # (arch-list label, GPU, expected) — binary compatibility per cuda-compat.md §4.3
    ("8.0;9.0", T4, Status.FAIL),
    ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", H200, Status.OK),
    ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", L4, Status.OK),  # sm_86 SASS runs on 8.9
    ("8.0;8.6", H100, Status.FAIL),  # SASS never crosses majors
    ("8.0+PTX", H100, Status.WARN),  # PTX JIT: slow first start
    ("9.0", RTX4090, Status.FAIL),  # newer SASS does not run on older GPU
]


@pytest.mark.parametrize(("arch_list", "model", "expected"), ARCH_TABLE)
def test_arch_table(arch_list: str, model: dict[str, Any], expected: Status) -> None:
    branch = 580 if model is H200 else 550
    labels = {"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": arch_list}
    check = only(judge(one_gpu(branch, model), image(labels=labels), DEFAULT), rules.ARCH)
    assert check.status is expected
    if expected is Status.FAIL:
        assert "no kernel image is available for execution on the device" in check.message
        assert check.fix is not None
        assert f"{model['cc']}" in check.fix


def test_ptx_newer_than_the_driver_cannot_be_jitted() -> None:
    labels = {"io.gpuship.cuda": "12.8", "io.gpuship.arch-list": "8.0+PTX"}
    check = only(judge(one_gpu(535, H100), image(labels=labels), DEFAULT), rules.ARCH)
    assert check.status is Status.FAIL
    assert "cudaErrorUnsupportedPtxVersion" in check.message


def test_ptx_jit_can_be_made_an_error() -> None:
    labels = {"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": "8.0+PTX"}
    config = VerifyConfig(ptx_jit="error")
    check = only(judge(one_gpu(550, H100), image(labels=labels), config), rules.ARCH)
    assert check.status is Status.FAIL


def test_deep_scan_judges_each_library_not_the_union() -> None:
    # libtorch has sm_90 but a custom extension only sm_80: the union would say "covered",
    # yet the extension's kernels fail on an H100.
    libraries = (
        ("/opt/venv/torch/lib/libtorch_cuda.so", ("sm_80", "sm_90")),
        ("/opt/app/ext/_kernels.so", ("sm_80",)),
    )
    base = CudaEvidence("CUDA_VERSION", "12.4", "env CUDA_VERSION")
    scan = ImageScan((base,), libraries, has_cuda_compat=False)
    scanned = image_needs("registry.example/app:1", IMAGES["12.4.1"], {}, scan)
    check = only(judge(one_gpu(550, H100), scanned, DEFAULT), rules.ARCH)
    assert check.status is Status.FAIL
    assert "/opt/app/ext/_kernels.so" in check.message
    assert "libtorch_cuda.so" not in check.message
    covered = only(judge(one_gpu(550, A100), scanned, DEFAULT), rules.ARCH)
    assert covered.status is Status.OK


def test_arch_unknown_is_skipped_with_a_hint() -> None:
    check = only(judge(one_gpu(550, A100), image(IMAGES["12.4.1"]), DEFAULT), rules.ARCH)
    assert check.status is Status.SKIP
    assert "--deep" in check.message


def test_mixed_host_fails_on_the_uncovered_gpu_only_unless_it_is_deselected() -> None:
    host = audit(535, [gpu(0, **A100), gpu(1, **T4)])
    needs = image(labels={"io.gpuship.cuda": "12.2", "io.gpuship.arch-list": "8.0;9.0"})
    arch = checks_of(judge(host, needs, DEFAULT), rules.ARCH)
    assert [c.status for c in arch] == [Status.OK, Status.FAIL]
    assert judge(host, needs, DEFAULT, ["0"]).status is Status.OK
    assert judge(host, needs, DEFAULT, [host.nvml.gpus[0].uuid]).status is Status.OK


def test_unknown_gpu_selection_is_an_input_error() -> None:
    with pytest.raises(InputError, match="--gpu 7"):
        judge(one_gpu(550, A100), None, DEFAULT, ["7"])


# -- container runtime ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtimes", "reachable", "cdi", "hook", "expected"),
    [
        (("nvidia", "runc"), True, (), False, Status.OK),
        (("runc",), True, (), True, Status.OK),  # moby registers --gpus through the hook
        (("runc",), True, ("nvidia.com/gpu=all",), False, Status.OK),
        (("runc",), True, (), False, Status.FAIL),
        (("runc",), True, ("vendor.example/fpga=0",), False, Status.FAIL),
        ((), False, ("nvidia.com/gpu=0",), False, Status.WARN),
        ((), False, (), False, Status.FAIL),
    ],
)
def test_runtime_reachability(
    runtimes: tuple[str, ...],
    reachable: bool,
    cdi: tuple[str, ...],
    hook: bool,
    expected: Status,
) -> None:
    host = audit(
        550, [gpu(**A100)], runtimes=runtimes, reachable=reachable, cdi_devices=cdi, hook=hook
    )
    check = only(judge(host, None, DEFAULT), rules.RUNTIME)
    assert check.status is expected
    if expected is Status.FAIL:
        assert check.fix is not None
        assert "nvidia-ctk" in check.fix


def test_cdi_spec_on_a_docker_without_cdi_warns() -> None:
    host = audit(
        550,
        [gpu(**A100)],
        runtimes=("runc",),
        hook=False,
        cdi_devices=("nvidia.com/gpu=all",),
        cdi_spec_dirs=(),
    )
    check = only(judge(host, None, DEFAULT), rules.RUNTIME)
    assert check.status is Status.WARN
    assert check.fix is not None
    assert "'cdi': true" in check.fix


def test_runtime_check_can_be_turned_off() -> None:
    host = audit(550, [gpu(**A100)], runtimes=("runc",), hook=False)
    config = VerifyConfig(require_gpu_runtime=False)
    assert only(judge(host, None, config), rules.RUNTIME).status is Status.SKIP


# -- devices, MIG, memory, ECC --------------------------------------------------------------


def test_gpu_count_from_config() -> None:
    host = one_gpu(550, A100)
    check = only(judge(host, None, VerifyConfig(gpus=2)), rules.DEVICES)
    assert check.status is Status.FAIL
    assert "needs 2" in check.message
    assert "offers 1" in check.message
    two = audit(550, [gpu(0, **A100), gpu(1, **A100)])
    assert only(judge(two, None, VerifyConfig(gpus=2)), rules.DEVICES).status is Status.OK


def test_mig_devices_count_and_their_memory_is_checked() -> None:
    host = audit(550, [gpu(mig_slices_gib=(39.25, 39.25), **A100)])
    verdict = judge(host, None, VerifyConfig(gpus=2, min_memory_gib=32))
    assert only(verdict, rules.DEVICES).status is Status.OK
    assert only(verdict, rules.MIG).status is Status.OK
    assert only(verdict, rules.MEMORY).status is Status.OK
    bigger = judge(host, None, VerifyConfig(min_memory_gib=48))
    memory = only(bigger, rules.MEMORY)
    assert memory.status is Status.FAIL
    assert "MIG" in memory.message


@pytest.mark.parametrize(
    ("mig_slices", "policy", "expected"),
    [
        ((39.25,), "forbid", Status.FAIL),
        (None, "require", Status.FAIL),
        ((), "allow", Status.WARN),  # MIG on, no instance: CUDA sees nothing
    ],
)
def test_mig_policy(mig_slices: tuple[float, ...] | None, policy: str, expected: Status) -> None:
    host = audit(550, [gpu(mig_slices_gib=mig_slices, **A100)])
    verdict = judge(host, None, VerifyConfig(mig=policy, gpus=0))  # type: ignore[arg-type]
    assert only(verdict, rules.MIG).status is expected


def test_memory_total_and_free() -> None:
    host = audit(550, [gpu(**{**L4, "free_gib": 2.0})])
    verdict = judge(host, None, VerifyConfig(min_memory_gib=40, min_free_memory_gib=10))
    memory = checks_of(verdict, rules.MEMORY)
    assert [c.status for c in memory] == [Status.FAIL, Status.FAIL]
    assert "22.5 GiB" in memory[0].message
    assert "2.0 GiB free" in memory[1].message


def test_uncorrected_ecc_errors_warn() -> None:
    host = audit(550, [gpu(ecc_uncorrected=2, **A100)])
    check = only(judge(host, None, DEFAULT), rules.ECC)
    assert check.status is Status.WARN
    assert "2 uncorrected" in check.message


def test_verdict_reason_is_the_first_failure() -> None:
    verdict = judge(one_gpu(550, RTX4090), image(IMAGES["13.0"]), DEFAULT)
    assert verdict.reason.startswith("GPU 0 (NVIDIA GeForce RTX 4090): ")


def test_require_values_are_generated_as_nvidia_writes_them() -> None:
    # guard for the test data itself: the 11.8 value quoted verbatim in the reference
    quoted = (
        "cuda>=11.8 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
        "brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 "
        "brand=geforce,driver>=470,driver<471 brand=geforcertx,driver>=470,driver<471 "
        "brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 "
        "brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471"
    )
    assert IMAGES["11.8"]["NVIDIA_REQUIRE_CUDA"] == quoted
    assert (
        require_cuda("12.4", (470,), ("tesla",)) == "cuda>=12.4 brand=tesla,driver>=470,driver<471"
    )
