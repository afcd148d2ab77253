"""The root of `gpuship.yaml`. Each stage contributes its own section model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuship.compat.config import VerifyConfig
from gpuship.config.locate import DEFAULT_DEADLINE_S, DEFAULT_FAIL_ON
from gpuship.config.section import Section, SeverityName
from gpuship.image.config import ImageStageConfig
from gpuship.limits import Limits
from gpuship.lint.config import LintConfig
from gpuship.matrix.config import ImageConfig
from gpuship.probe.config import ProbeConfig
from gpuship.release.config import ReleaseConfig
from gpuship.route.config import RouteConfig


class RegistriesConfig(Section):
    """How registries are reached."""

    insecure: list[str] = Field(
        default_factory=list,
        description=(
            "Registry hosts that may be reached over plain HTTP, credentials included (HTTPS "
            "is tried first; localhost and 127.0.0.0/8 always may)."
        ),
    )
    request_timeout: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds one registry request may take, from sending it to the last byte of the "
            "answer (blob streams: between two reads); never more than the deadline leaves."
        ),
    )
    attempts: int = Field(
        default=5,
        ge=1,
        description="Tries per registry request (connection errors, timeouts, 429 and 5xx).",
    )
    backoff: float = Field(
        default=0.5,
        ge=0,
        description=(
            "Seconds before the second try, doubled for each further one (at most 10); a "
            "`Retry-After` answer is honoured instead."
        ),
    )


class GpushipConfig(Section):
    """Everything `gpuship.yaml` may hold; all sections are optional."""

    version: Literal[1] = Field(default=1, description="Config file format version.")
    fail_on: Literal["error", "warning", "note", "never"] = Field(
        default=DEFAULT_FAIL_ON,
        description="Lowest finding severity that makes a command exit 1.",
    )
    deadline: float = Field(
        default=DEFAULT_DEADLINE_S,
        gt=0,
        description=(
            "Seconds a command may spend waiting on registries in all; then it stops with exit "
            "3 naming the request (a failed release keeps a fifth of it, at most 30 s, to put "
            "tags back). Also `GPUSHIP_DEADLINE` or `--deadline`."
        ),
    )
    rules: dict[str, SeverityName] = Field(
        default_factory=dict,
        description="Severity per rule id, name or category of any command ('off' turns the "
        "rule off), e.g. `GSV105: note`; ids win over names, names over categories. Findings "
        "and the exit code follow it; a command's result data still says what it found. Rules "
        "that report a failed write or push cannot be changed. For Dockerfile rules "
        "`lint.enable`, `lint.disable` and `lint.severity` apply too (and win at the same "
        "level). See `gpuship rules` for ids and effective severities.",
    )
    registries: RegistriesConfig = Field(default_factory=RegistriesConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    route: RouteConfig = Field(default_factory=RouteConfig)
    images: list[ImageConfig] = Field(default_factory=list)
    release: ReleaseConfig = Field(default_factory=ReleaseConfig)
    # Named after the command: `image:` beside `images:` would hide a typo in either.
    inspect: ImageStageConfig = Field(default_factory=ImageStageConfig)
    lint: LintConfig = Field(default_factory=LintConfig)
    probe: ProbeConfig = Field(default_factory=ProbeConfig)
    limits: Limits = Field(
        default_factory=Limits,
        description="Bounds on sizes, depths, counts and lengths of everything gpuship reads "
        "(hostile input ends in a clear error or finding naming the limit).",
    )
