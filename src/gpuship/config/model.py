"""The root of `gpuship.yaml`. Each stage contributes its own section model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuship.config.locate import DEFAULT_FAIL_ON
from gpuship.config.section import Section, SeverityName
from gpuship.image.config import ImageStageConfig
from gpuship.limits import Limits
from gpuship.lint.config import LintConfig
from gpuship.matrix.config import ImageConfig
from gpuship.probe.config import ProbeConfig
from gpuship.release.config import ReleaseConfig
from gpuship.route.config import RouteConfig
from gpuship.verify.config import VerifyConfig


class RegistriesConfig(Section):
    """How registries are reached."""

    insecure: list[str] = Field(
        default_factory=list,
        description=(
            "Registry hosts that may be reached over plain HTTP, credentials included (HTTPS "
            "is tried first; localhost and 127.0.0.0/8 always may)."
        ),
    )


class GpushipConfig(Section):
    """Everything `gpuship.yaml` may hold; all sections are optional."""

    version: Literal[1] = Field(default=1, description="Config file format version.")
    fail_on: Literal["error", "warning", "note", "never"] = Field(
        default=DEFAULT_FAIL_ON,
        description="Lowest finding severity that makes a command exit 1.",
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
