"""`NVIDIA_REQUIRE_*` evaluation with libnvidia-container's exact semantics.

Collection follows nvidia-container-toolkit (internal/config/image/cuda_image.go): every
`NVIDIA_REQUIRE_*` value except `NVIDIA_REQUIRE_JETPACK*`, none at all when
`NVIDIA_DISABLE_REQUIRE` is true for Go's `strconv.ParseBool`, plus `cuda>=M.m` from
`CUDA_VERSION` for legacy images without `NVIDIA_REQUIRE_CUDA`.

Evaluation follows nvidia-container-cli (src/cli/dsl.c, src/cli/configure.c): space-separated
terms are ORed, comma-separated factors ANDed, evaluation is lazy (a factor after a satisfied
term or a false factor is never parsed), keys are `cuda`/`driver`/`arch`/`brand`
(case-insensitive), operators `= != < <= > >=`, versions are compared component-wise with
trailing zero components ignored, brands case-insensitively with `=`/`!=` only, and each
requirement is evaluated for every visible GPU (once without a GPU when none is visible, with
`arch`/`brand` then passing). See cuda-compat.md §2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.cuda.errors import InvalidRequirement
from gpuship.redaction import shown

REQUIRE_PREFIX = "NVIDIA_REQUIRE_"
JETPACK_PREFIX = "NVIDIA_REQUIRE_JETPACK"
DISABLE_VARIABLE = "NVIDIA_DISABLE_REQUIRE"
LEGACY_VARIABLE = "CUDA_VERSION"
MAX_REQUIREMENTS = 16  # nvidia-container-cli `reqs[16]`: "too many requirements"

CLI_PREFIX = "nvidia-container-cli: requirement error: "
INVALID_EXPRESSION = CLI_PREFIX + "invalid expression"
_CUDA_HINT = ", please update your driver to a newer version, or use an earlier cuda container"

# Order matters: the C parser takes the first operator whose prefix equals the operator run.
_OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
_OPERATOR_CHARS = "<>=!"
_KEYS = ("cuda", "driver", "arch", "brand")
_EXPR_MAX = 128  # dsl.c formats a false factor into a 128-byte buffer; longer is an error
_UINTMAX = 2**64 - 1


@dataclass(frozen=True)
class GpuDevice:
    """A visible GPU as nvidia-container-cli sees it: brand string and "major.minor" arch."""

    brand: str | None
    arch: str


@dataclass(frozen=True)
class HostFacts:
    """Host values the requirements are checked against (None: that check passes, as in C)."""

    driver: str | None
    cuda: str | None
    gpus: tuple[GpuDevice, ...] = ()


@dataclass(frozen=True)
class Requirement:
    """One NVIDIA_REQUIRE_* variable."""

    # Passed to nvidia-container-cli as `--require=<expression>`. `gpuship kb check-require`
    # publishes it as it is (the docstring is its description in the JSON Schema).
    variable: str
    expression: str


@dataclass(frozen=True)
class FailedFactor:
    """A factor of the failing condition, and the host's value for it."""

    # The factor that made one OR term false. Published as it is by `kb check-require`.
    factor: str
    actual: str | None


@dataclass(frozen=True)
class RequireFailure:
    """Why the requirements are unsatisfied, with nvidia-container-cli's own message."""

    requirement: Requirement
    gpu_index: int | None
    condition: str
    message: str
    failed_factors: tuple[FailedFactor, ...]


@dataclass(frozen=True)
class RequireResult:
    satisfied: bool
    disabled: bool
    requirements: tuple[Requirement, ...]
    failure: RequireFailure | None


class _InvalidTerm(Exception):
    """A term or factor of a requirement that nvidia-container-cli would refuse, and why."""

    def __init__(self, term: str, reason: str) -> None:
        super().__init__(reason)
        self.term = term
        self.reason = reason


def go_parse_bool(text: str) -> bool | None:
    """Go `strconv.ParseBool`: True/False for its accepted spellings, None otherwise."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def requirements_disabled(env: Mapping[str, str]) -> bool:
    """`NVIDIA_DISABLE_REQUIRE` set to a Go-true value (unparsable values keep checks on)."""
    value = env.get(DISABLE_VARIABLE)
    return value is not None and go_parse_bool(value) is True


# golang.org/x/mod/semver, as used by cuda_image.go's parseMajorMinorVersion.
_SEMVER_NUMBER = r"(?:0|[1-9][0-9]*)"
_SEMVER_IDENT = r"[0-9A-Za-z-]+"
_SEMVER_PRERELEASE_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
# A string, compiled by `re`'s own cache on first use: only a CUDA_VERSION needs it, and
# compiling it at import was the largest single cost of a one-file lint's start-up (issue #37).
_GO_SEMVER = (
    rf"v(?P<major>{_SEMVER_NUMBER})"
    rf"(?:\.(?P<minor>{_SEMVER_NUMBER})"
    rf"(?:\.{_SEMVER_NUMBER}"
    rf"(?:-{_SEMVER_PRERELEASE_IDENT}(?:\.{_SEMVER_PRERELEASE_IDENT})*)?"
    rf"(?:\+{_SEMVER_IDENT}(?:\.{_SEMVER_IDENT})*)?)?)?"
)


def legacy_cuda_requirement(cuda_version: str) -> str:
    """`CUDA_VERSION` "12.4.1" -> "cuda>=12.4"; invalid versions raise InvalidRequirement."""
    text = "v" + cuda_version.removeprefix("v")
    match = re.fullmatch(_GO_SEMVER, text)
    major, minor = (match.group("major"), match.group("minor") or "0") if match else ("", "")
    # No leading zeros here: more than 10 digits is >= 2**32 without converting 100,000 digits.
    if not match or any(len(n) > 10 or int(n) >= 2**32 for n in (major, minor)):
        raise InvalidRequirement(
            cuda_version,
            cuda_version,
            "invalid CUDA version: the NVIDIA hook fails with "
            '"failed to get version: invalid CUDA version: invalid version string"',
            LEGACY_VARIABLE,
        )
    return f"cuda>={major}.{minor}"


def image_requirements(env: Mapping[str, str]) -> tuple[Requirement, ...]:
    """The requirements the NVIDIA hook passes for an image environment, sorted by variable.

    (The Go hook iterates a map, so its order is random; a stable order makes reports stable.)
    """
    if requirements_disabled(env):
        return ()
    requirements = [
        Requirement(name, value)
        for name, value in sorted(env.items())
        if name.startswith(REQUIRE_PREFIX) and not name.startswith(JETPACK_PREFIX)
    ]
    legacy = env.get(LEGACY_VARIABLE, "")
    if legacy and not env.get(REQUIRE_PREFIX + "CUDA", ""):
        requirements.append(Requirement(LEGACY_VARIABLE, legacy_cuda_requirement(legacy)))
    if len(requirements) > MAX_REQUIREMENTS:
        names = ", ".join(r.variable for r in requirements)
        raise InvalidRequirement(
            "",
            names,
            f"{len(requirements)} requirements; nvidia-container-cli accepts at most "
            f"{MAX_REQUIREMENTS} (input error: too many requirements)",
        )
    return tuple(requirements)


@dataclass(frozen=True)
class _Factor:
    key: str
    operator: str
    value: str


def _parse_factor(text: str) -> _Factor:
    key_end = next((i for i, c in enumerate(text) if c in _OPERATOR_CHARS), len(text))
    if key_end == 0:
        raise _InvalidTerm(text, "missing key before the operator")
    run_end = key_end
    while run_end < len(text) and text[run_end] in _OPERATOR_CHARS:
        run_end += 1
    run = text[key_end:run_end]
    if not run:
        raise _InvalidTerm(text, "no operator (one of = != < <= > >=)")
    # strncmp(run, op, len(run)): `op` must start with the whole run ("!" selects "!=").
    operator = next((op for op in _OPERATORS if len(op) >= len(run) and op.startswith(run)), None)
    if operator is None:
        raise _InvalidTerm(text, f"unsupported operator {run!r} (use one of = != < <= > >=)")
    value = text[run_end:]
    if not value:
        raise _InvalidTerm(text, "missing value after the operator")
    key = text[:key_end]
    if key.lower() not in _KEYS:
        raise _InvalidTerm(text, f"unknown key {key!r} (use cuda, driver, arch or brand)")
    return _Factor(key, operator, value)


def _leading_number(text: str, start: int, term: str) -> tuple[int, int]:
    end = start
    while end < len(text) and text[end].isdigit():
        end += 1
    if end == start:
        raise _InvalidTerm(term, f"{shown(text)} is not a dotted version")
    digits = text[start:end].lstrip("0")
    # strtoumax overflows past 20 digits; saying so spares an int() of 100,000 digits.
    number = int(digits or "0") if len(digits) <= len(str(_UINTMAX)) else _UINTMAX
    if number >= _UINTMAX:
        raise _InvalidTerm(term, f"{shown(text)} has a number too large")
    return number, end


def _skip(text: str, index: int, chars: str) -> int:
    while index < len(text) and text[index] in chars:
        index += 1
    return index


def compare_versions(actual: str, operator: str, required: str, term: str = "") -> bool:
    """dsl_compare_version: numeric, component-wise, trailing `.0` ignored (12.4 == 12.4.0)."""
    for text in (actual, required):
        if any(c not in "0123456789." for c in text):
            raise _InvalidTerm(term, f"{text!r} is not a dotted version")
    i = j = 0
    while i < len(actual) and j < len(required):
        n1, i = _leading_number(actual, i, term)
        n2, j = _leading_number(required, j, term)
        if n1 != n2:
            if operator == "=":
                return False
            if operator == "!=":
                return True
            return n1 < n2 if operator in ("<", "<=") else n1 > n2
        i, j = _skip(actual, i, "."), _skip(required, j, ".")
    rest_actual = _skip(actual, i, ".0") == len(actual)
    rest_required = _skip(required, j, ".0") == len(required)
    both_ended = rest_actual and rest_required
    if operator == "!=":
        return not both_ended
    if operator in ("=", "<=", ">=") and both_ended:
        return True
    if operator == "=":
        return False
    if operator in ("<", "<="):
        return rest_actual and not rest_required
    return not rest_actual and rest_required


def _compare_brand(actual: str, operator: str, required: str, term: str) -> bool:
    if operator == "=":
        return actual.lower() == required.lower()
    if operator == "!=":
        return actual.lower() != required.lower()
    raise _InvalidTerm(term, f"brand only supports = and != (got {operator!r})")


def _actual(key: str, host: HostFacts, gpu: GpuDevice | None) -> str | None:
    if key == "cuda":
        return host.cuda
    if key == "driver":
        return host.driver
    if gpu is None:
        return None
    return gpu.arch if key == "arch" else gpu.brand


def _evaluate_factor(text: str, host: HostFacts, gpu: GpuDevice | None) -> bool:
    factor = _parse_factor(text)
    key = factor.key.lower()
    actual = _actual(key, host, gpu)
    if actual is None:
        # No device visible / no driver data: nvidia-container-cli assumes the check passes.
        return True
    if key == "brand":
        result = _compare_brand(actual, factor.operator, factor.value, text)
    else:
        result = compare_versions(actual, factor.operator, factor.value, text)
    if not result and len(f"{factor.key} {factor.operator} {factor.value}") >= _EXPR_MAX:
        raise _InvalidTerm(text, f"factor longer than {_EXPR_MAX - 1} characters")
    return result


def _evaluate(
    expression: str, host: HostFacts, gpu: GpuDevice | None
) -> tuple[bool, tuple[FailedFactor, ...]]:
    result = True
    failed: list[FailedFactor] = []
    for term in expression.split(" "):
        if not term:
            continue
        term_held = True
        for factor in term.split(","):
            if not factor:
                continue
            result = _evaluate_factor(factor, host, gpu)
            if not result:
                key = _parse_factor(factor).key.lower()
                failed.append(FailedFactor(factor, _actual(key, host, gpu)))
                term_held = False
                break
        # Like dsl.c: a term whose factors all held (or were all empty) ends the evaluation
        # with the last factor's result.
        if term_held:
            break
    return result, tuple(failed) if not result else ()


def _invalid(exc: _InvalidTerm, expression: str, variable: str | None) -> InvalidRequirement:
    return InvalidRequirement(
        expression, exc.term, f"{exc.reason} ({INVALID_EXPRESSION})", variable
    )


def evaluate_expression(
    expression: str,
    host_driver: str | None,
    host_cuda: str | None,
    gpu: GpuDevice | None = None,
) -> bool:
    """Evaluate one requirement expression for one GPU (None: no GPU visible)."""
    try:
        return _evaluate(expression, HostFacts(host_driver, host_cuda), gpu)[0]
    except _InvalidTerm as exc:
        raise _invalid(exc, expression, None) from None


def validate_expression(expression: str, variable: str | None = None) -> None:
    """Check every factor, even those nvidia-container-cli would never reach (for lint)."""
    for term in expression.split(" "):
        for factor_text in term.split(","):
            if not factor_text:
                continue
            try:
                factor = _parse_factor(factor_text)
                if factor.key.lower() == "brand":
                    _compare_brand("", factor.operator, factor.value, factor_text)
                else:
                    compare_versions(factor.value, "=", factor.value, factor_text)
            except _InvalidTerm as exc:
                raise _invalid(exc, expression, variable) from None


def compared_values(env: Mapping[str, str], key: str) -> tuple[str, ...]:
    """Every value the image's requirements compare `key` (cuda, driver, arch, brand) with, for
    callers that split a space of hosts where an answer can change. Factors that do not parse
    are left out: such a requirement is refused on every host alike."""
    try:
        requirements = image_requirements(env)
    except InvalidRequirement:
        return ()
    values: list[str] = []
    for requirement in requirements:
        for term in requirement.expression.split(" "):
            for text in term.split(","):
                try:
                    factor = _parse_factor(text) if text else None
                except _InvalidTerm:
                    continue
                if factor is not None and factor.key.lower() == key and factor.value not in values:
                    values.append(factor.value)
    return tuple(values)


def unsatisfied_message(expression: str) -> tuple[str, str]:
    """(condition, message) exactly as nvidia-container-cli prints them for `expression`.

    It reports the first space-separated token of the whole expression, not the failing one.
    """
    condition = expression.split(" ", 1)[0]
    if condition.startswith("cuda>="):
        return condition, f"{CLI_PREFIX}unsatisfied condition: {condition}{_CUDA_HINT}"
    return condition, f"{CLI_PREFIX}unsatisfied condition: {condition}"


def evaluate_requirements(env: Mapping[str, str], host: HostFacts) -> RequireResult:
    """Evaluate an image's requirements on a host, as the NVIDIA hook + nvidia-container-cli do.

    Raises InvalidRequirement where the container would fail with an input or expression error.
    """
    if requirements_disabled(env):
        return RequireResult(True, True, (), None)
    requirements = image_requirements(env)
    devices: tuple[GpuDevice | None, ...] = host.gpus or (None,)
    for index, gpu in enumerate(devices):
        for requirement in requirements:
            try:
                satisfied, failed = _evaluate(requirement.expression, host, gpu)
            except _InvalidTerm as exc:
                raise _invalid(exc, requirement.expression, requirement.variable) from None
            if not satisfied:
                condition, message = unsatisfied_message(requirement.expression)
                failure = RequireFailure(
                    requirement, index if gpu is not None else None, condition, message, failed
                )
                return RequireResult(False, False, requirements, failure)
    return RequireResult(True, False, requirements, None)
