"""What an image declares about CUDA in its config: the one reader of env and labels.

Two questions, each answered once here:
- which CUDA the image says it holds (`declared_cuda`): the build stage's `io.gpuship.cuda`
  label first (as `compat.needs`, its one reader, read it), then the toolkit's own
  `CUDA_VERSION` (the exact release, which decides the
  minimum driver), then the floor `NVIDIA_REQUIRE_CUDA` states;
- what the container runtime will enforce (`cuda_claims`): `NVIDIA_REQUIRE_CUDA`, or the
  `CUDA_VERSION` it implies when that is absent, as nvidia-container-cli reads them
  (cuda-compat.md §7), plus the gpuship labels; none of it when `NVIDIA_DISABLE_REQUIRE`
  turns the checks off (`claims_enforced`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.require import requirements_disabled
from gpuship.cuda.version import Version
from gpuship.labels import LABEL_CUDA, LABEL_MIN_DRIVER

REQUIRE_VARIABLE = "NVIDIA_REQUIRE_CUDA"
VERSION_VARIABLE = "CUDA_VERSION"
_REQUIRE_CUDA = re.compile(r"(?:^|[\s,])cuda>=(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class Claim:
    """One statement the image makes: `source` is the env variable or label, `value` its text."""

    source: str
    value: str


def cuda_claims(env: Mapping[str, str], labels: Mapping[str, str]) -> tuple[Claim, ...]:
    """The CUDA and driver statements an image makes (the implied CUDA_VERSION one only when
    NVIDIA_REQUIRE_CUDA is absent, as nvidia-container-cli reads them)."""
    claims = []
    if REQUIRE_VARIABLE in env:
        claims.append(Claim(REQUIRE_VARIABLE, env[REQUIRE_VARIABLE]))
    elif VERSION_VARIABLE in env:
        claims.append(Claim(VERSION_VARIABLE, env[VERSION_VARIABLE]))
    for label in (LABEL_CUDA, LABEL_MIN_DRIVER):
        if label in labels:
            claims.append(Claim(label, labels[label]))
    return tuple(claims)


def claims_enforced(env: Mapping[str, str]) -> bool:
    """Whether the runtime checks the image's NVIDIA_REQUIRE_* (NVIDIA_DISABLE_REQUIRE not set)."""
    return not requirements_disabled(env)


def claimed_cuda(claim: Claim) -> Version | None:
    """The CUDA release (major.minor) a CUDA claim states; None when it states none.

    For NVIDIA_REQUIRE_CUDA, the highest `cuda>=` of its alternatives.
    """
    if claim.source == LABEL_MIN_DRIVER:
        return None
    if claim.source == REQUIRE_VARIABLE:
        found = [_version(match) for match in _REQUIRE_CUDA.findall(claim.value)]
        versions = [version for version in found if version is not None]
        return max(versions).major_minor() if versions else None
    version = _version(claim.value.strip())
    return version.major_minor() if version else None


def declared_cuda(env: Mapping[str, str], labelled: str | None) -> tuple[str | None, str | None]:
    """(the CUDA the image says it holds, where that was read) or (None, None). `labelled`
    is the io.gpuship.cuda label as `compat.needs` read it (None: not stated)."""
    if labelled:
        return labelled, f"label {LABEL_CUDA}"
    if env.get(VERSION_VARIABLE):
        return env[VERSION_VARIABLE], f"env {VERSION_VARIABLE}"
    floor = claimed_cuda(Claim(REQUIRE_VARIABLE, env.get(REQUIRE_VARIABLE, "")))
    if floor is not None:
        return str(floor), f"env {REQUIRE_VARIABLE}"
    return None, None


def _version(text: str) -> Version | None:
    try:
        return Version.parse(text)
    except InvalidVersion:
        return None
