"""The `lint:` section of `gpuship.yaml`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpuship.config.section import Section

SeverityName = Literal["note", "warning", "error", "off"]


class LintConfig(Section):
    """Which Dockerfile rules run, how severe they are, and the policy they enforce."""

    enable: list[str] = Field(
        default_factory=list,
        description="Run only these rules (ids, names or categories); empty: all rules.",
    )
    disable: list[str] = Field(
        default_factory=list,
        description="Rules (ids, names or categories) never to run.",
    )
    severity: dict[str, SeverityName] = Field(
        default_factory=dict,
        description="Severity per rule id, name or category ('off' disables); ids win over "
        "names, names over categories.",
    )
    trusted_registries: list[str] = Field(
        default_factory=list,
        description="Registries base images may come from (e.g. docker.io, nvcr.io, "
        "'*.dkr.ecr.us-east-1.amazonaws.com'); empty: any.",
    )
    require_digest: bool = Field(
        default=False,
        description="Report base images without @sha256 digest as warnings instead of notes.",
    )
    allowed_toolchains: list[str] = Field(
        default_factory=list,
        description="Compilers/packages allowed in the final image (e.g. gcc for Triton JIT).",
    )
    mutable_tags: list[str] = Field(
        default_factory=lambda: [
            "latest",
            "main",
            "master",
            "nightly",
            "edge",
            "dev",
            "devel",
            "stable",
            "rolling",
            "unstable",
            "canary",
        ],
        description="Base-image tags (also as 'NAME-*' prefixes) that move over time.",
    )
    weights_min_mib: float = Field(
        default=1.0,
        ge=0,
        description="Weight files in the build context smaller than this are not reported.",
    )
    large_copy_mib: float = Field(
        default=500.0,
        ge=0,
        description="A COPY of more than this from the build context is reported as a size risk.",
    )
