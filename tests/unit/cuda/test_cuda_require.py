"""The NVIDIA_REQUIRE_* evaluator, case by case against libnvidia-container's semantics
(cuda-compat.md §2: dsl.c, configure.c, cuda_image.go)."""

from __future__ import annotations

import pytest

from gpuship.cuda.errors import InvalidRequirement
from gpuship.cuda.require import (
    GpuDevice,
    HostFacts,
    compare_versions,
    evaluate_expression,
    evaluate_requirements,
    go_parse_bool,
    image_requirements,
    legacy_cuda_requirement,
    requirements_disabled,
    unsatisfied_message,
    validate_expression,
)

CUDA_HINT = ", please update your driver to a newer version, or use an earlier cuda container"
PREFIX = "nvidia-container-cli: requirement error: unsatisfied condition: "

TESLA_80 = GpuDevice("Tesla", "8.0")
GEFORCE_89 = GpuDevice("GeForce", "8.9")

# NVIDIA_REQUIRE_CUDA of nvidia/cuda:12.4.1 (cuda-compat.md §2.6), abbreviated to two brands.
REQUIRE_1241 = " ".join(
    ["cuda>=12.4"]
    + [
        f"brand={brand},driver>={branch},driver<{branch + 1}"
        for branch in (470, 525, 535)
        for brand in ("tesla", "geforce")
    ]
)
# nvidia/cuda:12.6.3 drops geforce/titan from the compat terms.
REQUIRE_1263 = " ".join(
    ["cuda>=12.6"]
    + [
        f"brand={brand},driver>={branch},driver<{branch + 1}"
        for branch in (470, 535, 550)
        for brand in ("unknown", "grid", "tesla", "nvidia", "quadro", "nvidiartx")
    ]
)


@pytest.mark.parametrize(
    ("actual", "operator", "required", "expected"),
    [
        ("12.4", ">=", "12.4", True),
        ("12.4", "=", "12.4.0", True),  # trailing .0 ignored
        ("12.4.0.0", "=", "12.4", True),
        ("12.4", "!=", "12.4.0", False),
        ("12.4", "<", "12.4.1", True),
        ("12.4", ">", "12.4.1", False),
        ("12.10", ">", "12.9", True),  # numeric, not lexical
        ("535.104.05", ">=", "535.104.5", True),  # leading zeros are numbers
        ("535.104.05", ">=", "535.104.6", False),
        ("535.104.05", "<", "536", True),
        ("470.82.01", ">=", "470", True),
        ("470.82.01", "<", "471", True),
        ("12.2", "<=", "12.2", True),
        ("12.2", "<=", "12.1", False),
        ("13", ">", "12.9", True),
        ("12.4", "=", "12.4.05", False),
        ("12.4", "<", "12.4.05", True),
        ("12..4", "=", "12.4", True),  # empty components are skipped, as strspn(".") does
    ],
)
def test_compare_versions(actual: str, operator: str, required: str, expected: bool) -> None:
    assert compare_versions(actual, operator, required) is expected


@pytest.mark.parametrize(
    ("expression", "driver", "cuda", "gpu", "expected"),
    [
        # single factors
        ("cuda>=12.4", "550.54.15", "12.4", None, True),
        ("cuda>=12.4", "535.104.05", "12.2", None, False),
        ("driver>=535", "535.104.05", "12.2", None, True),
        ("driver<535", "535.104.05", "12.2", None, False),
        # comma = AND
        ("driver>=470,driver<471", "470.82.01", "11.4", None, True),
        ("driver>=470,driver<471", "535.104.05", "12.2", None, False),
        # space = OR
        ("cuda>=12.4 driver>=535", "535.104.05", "12.2", None, True),
        ("cuda>=12.4 driver>=550", "535.104.05", "12.2", None, False),
        # brand: case-insensitive, per GPU
        ("brand=tesla", None, None, TESLA_80, True),
        ("brand=TESLA", None, None, TESLA_80, True),
        ("brand=tesla", None, None, GEFORCE_89, False),
        ("brand!=geforce", None, None, GEFORCE_89, False),
        ("brand=nvidiartx", None, None, GpuDevice("NvidiaRTX", "8.6"), True),
        # a brand the GPU does not report (None) passes, as in check_device_brand
        ("brand=tesla", None, None, GpuDevice(None, "8.0"), True),
        # arch compares as a version
        ("arch>=8.0", None, None, GEFORCE_89, True),
        ("arch>=9.0", None, None, GEFORCE_89, False),
        ("arch=8.0", None, None, GpuDevice("Tesla", "8.0"), True),
        # no GPU visible: arch and brand pass
        ("arch>=9.0", "535.104.05", "12.2", None, True),
        ("brand=tesla", "535.104.05", "12.2", None, True),
        # missing host data passes
        ("cuda>=99", None, None, None, True),
        ("driver>=999", None, "12.2", None, True),
        # keys are case-insensitive
        ("CUDA>=12.0", "535.104.05", "12.2", None, True),
        # empty tokens are skipped; empty predicate is satisfied
        ("", "535.104.05", "12.2", None, True),
        ("  cuda>=12.0  ", "535.104.05", "12.2", None, True),
        ("cuda>=12.0,,driver>=535", "535.104.05", "12.2", None, True),
        # a term of only empty factors keeps the previous term's result (dsl.c quirk)
        ("cuda>=99 ,", "535.104.05", "12.2", None, False),
        (",", "535.104.05", "12.2", None, True),
        # "!" alone selects "!=" (strncmp on the operator run)
        ("cuda!12.2", "535.104.05", "12.2", None, False),
        ("cuda!12.4", "535.104.05", "12.2", None, True),
        # lazy: an invalid factor after a satisfied term is never parsed
        ("cuda>=12.0 foo=bar", "535.104.05", "12.2", None, True),
        # lazy: an invalid factor after a false factor in the same term is never parsed
        ("cuda>=99,foo=bar driver>=535", "535.104.05", "12.2", None, True),
        # brand values containing operator characters are compared, not rejected
        ("brand=te=sla", None, None, TESLA_80, False),
        # the real 12.4.1 image on a Tesla, driver 535: forward-compat term holds
        (REQUIRE_1241, "535.104.05", "12.2", TESLA_80, True),
        # ... on GeForce: 12.4.1 still listed geforce compat terms
        (REQUIRE_1241, "535.104.05", "12.2", GEFORCE_89, True),
        # 12.6.3 dropped geforce: GeForce on 535 fails, Tesla on 535 passes
        (REQUIRE_1263, "535.104.05", "12.2", GEFORCE_89, False),
        (REQUIRE_1263, "535.104.05", "12.2", TESLA_80, True),
        # a driver new enough passes on any brand
        (REQUIRE_1263, "560.35.05", "12.6", GEFORCE_89, True),
        # Tesla on a branch without a compat term fails
        (REQUIRE_1263, "545.23.08", "12.3", TESLA_80, False),
    ],
)
def test_evaluate_expression(
    expression: str, driver: str | None, cuda: str | None, gpu: GpuDevice | None, expected: bool
) -> None:
    assert evaluate_expression(expression, driver, cuda, gpu) is expected


@pytest.mark.parametrize(
    ("expression", "term"),
    [
        ("cuda==12.4", "cuda==12.4"),  # "==" is not an operator
        ("cuda=>12.4", "cuda=>12.4"),
        ("cuda", "cuda"),  # no operator
        (">=12.4", ">=12.4"),  # no key
        ("cuda>=", "cuda>="),  # no value
        ("foo>=1", "foo>=1"),  # unknown key
        ("cuda>=12.x", "cuda>=12.x"),  # not a version
        ("cuda>=v12.4", "cuda>=v12.4"),
        ("brand>=tesla", "brand>=tesla"),  # brand only = and !=
        ("driver>=535 cuda>=.5", "driver>=535"),  # first term false on 470 -> reaches the second
    ],
)
def test_invalid_expression_names_the_term(expression: str, term: str) -> None:
    with pytest.raises(InvalidRequirement) as excinfo:
        evaluate_expression(expression, "470.82.01", "11.4", TESLA_80)
    error = excinfo.value
    if expression.startswith("driver>=535"):
        assert error.term == "cuda>=.5"
    else:
        assert error.term == term
    assert "invalid expression" in str(error)
    assert error.exit_code == 2


def test_false_factor_too_long_for_the_c_buffer_is_invalid() -> None:
    long_value = "999" + ".0" * 70  # no number overflows, the text is long
    with pytest.raises(InvalidRequirement):
        evaluate_expression(f"driver>={long_value}", "535.104.05", "12.2")
    # the same factor when true is fine (the buffer is only written on failure)
    assert evaluate_expression(f"driver<{long_value}", "535.104.05", "12.2") is True


@pytest.mark.parametrize(
    "expression",
    ["cuda>=99,foo=bar", "cuda>=12.0 brand>=x", "cuda>=12.0 arch>=8.a"],
)
def test_validate_expression_is_strict_where_c_is_lazy(expression: str) -> None:
    evaluate_expression(expression, "535.104.05", "12.2", TESLA_80)  # C: no error
    with pytest.raises(InvalidRequirement):
        validate_expression(expression, "NVIDIA_REQUIRE_CUDA")


def test_validate_expression_accepts_real_image_values() -> None:
    validate_expression(REQUIRE_1241)
    validate_expression(REQUIRE_1263)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
        ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False),
        ("False", False), ("yes", None), ("tRUE", None), ("", None), (" true", None),
    ],
)  # fmt: skip
def test_go_parse_bool(text: str, expected: bool | None) -> None:
    assert go_parse_bool(text) is expected


@pytest.mark.parametrize(
    ("value", "disabled"), [("true", True), ("1", True), ("yes", False), ("", False)]
)
def test_disable_require(value: str, disabled: bool) -> None:
    env = {"NVIDIA_DISABLE_REQUIRE": value, "NVIDIA_REQUIRE_CUDA": "cuda>=99"}
    assert requirements_disabled(env) is disabled
    result = evaluate_requirements(env, HostFacts("535.104.05", "12.2"))
    assert result.disabled is disabled
    assert result.satisfied is disabled


def test_disable_requires_with_trailing_s_is_not_read() -> None:
    env = {"NVIDIA_DISABLE_REQUIRES": "true", "NVIDIA_REQUIRE_CUDA": "cuda>=99"}
    assert not evaluate_requirements(env, HostFacts("535.104.05", "12.2")).satisfied


def test_collection_skips_jetpack_and_sorts() -> None:
    env = {
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.0",
        "NVIDIA_REQUIRE_ARCH": "arch>=8.0",
        "NVIDIA_REQUIRE_JETPACK": "csv-mounts=all",
        "NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS": "x",
        "nvidia_require_lower": "cuda>=99",  # prefix match is case-sensitive
        "PATH": "/usr/bin",
    }
    requirements = image_requirements(env)
    assert [r.variable for r in requirements] == ["NVIDIA_REQUIRE_ARCH", "NVIDIA_REQUIRE_CUDA"]


@pytest.mark.parametrize(
    ("cuda_version", "expected"),
    [
        ("12.4.1", "cuda>=12.4"),
        ("v12.4.1", "cuda>=12.4"),
        ("12.4", "cuda>=12.4"),
        ("12", "cuda>=12.0"),
        ("11.8.0-rc.1", "cuda>=11.8"),
        ("11.8.0+build.5", "cuda>=11.8"),
    ],
)
def test_legacy_cuda_version(cuda_version: str, expected: str) -> None:
    assert legacy_cuda_requirement(cuda_version) == expected


@pytest.mark.parametrize("cuda_version", ["12.04", "12.4-rc", "12.4.1.2", "latest", "1.2.3-01"])
def test_legacy_cuda_version_invalid(cuda_version: str) -> None:
    with pytest.raises(InvalidRequirement) as excinfo:
        image_requirements({"CUDA_VERSION": cuda_version})
    assert excinfo.value.variable == "CUDA_VERSION"


def test_legacy_image_gets_implied_cuda_requirement() -> None:
    env = {"CUDA_VERSION": "12.4.1"}
    result = evaluate_requirements(env, HostFacts("535.104.05", "12.2"))
    assert not result.satisfied
    assert result.failure is not None
    assert result.failure.requirement.variable == "CUDA_VERSION"
    assert result.failure.message == PREFIX + "cuda>=12.4" + CUDA_HINT


def test_legacy_ignored_when_require_cuda_set() -> None:
    env = {"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.2"}
    assert [r.expression for r in image_requirements(env)] == ["cuda>=12.2"]
    # An empty NVIDIA_REQUIRE_CUDA still counts as "not set": legacy applies as well.
    env = {"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": ""}
    assert [r.expression for r in image_requirements(env)] == ["", "cuda>=12.4"]


def test_too_many_requirements() -> None:
    env = {f"NVIDIA_REQUIRE_X{i:02}": "cuda>=1" for i in range(17)}
    with pytest.raises(InvalidRequirement, match="at most 16"):
        image_requirements(env)
    del env["NVIDIA_REQUIRE_X16"]
    assert len(image_requirements(env)) == 16


def test_message_reports_first_token_not_failing_term() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": REQUIRE_1263}
    result = evaluate_requirements(env, HostFacts("535.104.05", "12.2", (GEFORCE_89,)))
    failure = result.failure
    assert failure is not None
    assert failure.condition == "cuda>=12.6"
    assert failure.message == PREFIX + "cuda>=12.6" + CUDA_HINT
    assert failure.gpu_index == 0
    # ours names what actually failed in each OR term
    assert failure.failed_factors[0].factor == "cuda>=12.6"
    assert failure.failed_factors[0].actual == "12.2"
    assert {f.factor.split(",")[0] for f in failure.failed_factors[1:]} <= {
        "brand=unknown", "brand=grid", "brand=tesla", "brand=nvidia", "brand=quadro",
        "brand=nvidiartx", "driver<471", "driver>=550",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "condition", "message"),
    [
        ("cuda>=12.4", "cuda>=12.4", PREFIX + "cuda>=12.4" + CUDA_HINT),
        ("arch>=9.0 brand=tesla", "arch>=9.0", PREFIX + "arch>=9.0"),
        ("CUDA>=12.4", "CUDA>=12.4", PREFIX + "CUDA>=12.4"),  # hint only for lower-case cuda>=
        ("cuda>12.4", "cuda>12.4", PREFIX + "cuda>12.4"),
        (" cuda>=12.4", "", PREFIX),  # leading space: first token is empty
    ],
)
def test_unsatisfied_message(expression: str, condition: str, message: str) -> None:
    assert unsatisfied_message(expression) == (condition, message)


def test_each_gpu_is_evaluated() -> None:
    env = {"NVIDIA_REQUIRE_ARCH": "arch>=8.0"}
    host = HostFacts("535.104.05", "12.2", (TESLA_80, GpuDevice("Tesla", "7.5")))
    result = evaluate_requirements(env, host)
    assert not result.satisfied
    assert result.failure is not None
    assert result.failure.gpu_index == 1
    assert result.failure.message == PREFIX + "arch>=8.0"


def test_separate_variables_are_anded() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0", "NVIDIA_REQUIRE_BRAND": "brand=tesla"}
    assert evaluate_requirements(env, HostFacts("535.104.05", "12.2", (TESLA_80,))).satisfied
    result = evaluate_requirements(env, HostFacts("535.104.05", "12.2", (GEFORCE_89,)))
    assert not result.satisfied
    assert result.failure is not None
    assert result.failure.requirement.variable == "NVIDIA_REQUIRE_BRAND"


def test_invalid_requirement_names_variable() -> None:
    env = {"NVIDIA_REQUIRE_FOO": "cuda==12"}
    with pytest.raises(InvalidRequirement) as excinfo:
        evaluate_requirements(env, HostFacts("535.104.05", "12.2"))
    assert excinfo.value.variable == "NVIDIA_REQUIRE_FOO"
    assert "NVIDIA_REQUIRE_FOO" in str(excinfo.value)
    assert "cuda==12" in str(excinfo.value)


def test_no_requirements_is_satisfied() -> None:
    result = evaluate_requirements({"PATH": "/bin"}, HostFacts("470.82.01", "11.4"))
    assert result.satisfied
    assert result.requirements == ()
