"""The `lint:` section of `gpuship.yaml`, validated; rules read it as `LintSettings`."""

from __future__ import annotations

from types import MappingProxyType

from pydantic import Field

from gpuship.config.section import Section, SeverityName
from gpuship.lint.settings import LintSettings

_DEFAULTS = LintSettings()


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
        default=_DEFAULTS.require_digest,
        description="Report base images without @sha256 digest as warnings instead of notes.",
    )
    allowed_toolchains: list[str] = Field(
        default_factory=list,
        description="Compilers/packages allowed in the final image (e.g. gcc for Triton JIT).",
    )
    mutable_tags: list[str] = Field(
        default_factory=lambda: list(_DEFAULTS.mutable_tags),
        description="Base-image tags (also as 'NAME-*' prefixes) that move over time.",
    )
    weights_min_mib: float = Field(
        default=_DEFAULTS.weights_min_mib,
        ge=0,
        description="Weight files in the build context smaller than this are not reported.",
    )
    large_copy_mib: float = Field(
        default=_DEFAULTS.large_copy_mib,
        ge=0,
        description="A COPY of more than this from the build context is reported as a size risk.",
    )

    def settings(self) -> LintSettings:
        """The policy the rules apply."""
        return LintSettings(
            enable=tuple(self.enable),
            disable=tuple(self.disable),
            severity=MappingProxyType(dict(self.severity)),
            trusted_registries=tuple(self.trusted_registries),
            require_digest=self.require_digest,
            allowed_toolchains=tuple(self.allowed_toolchains),
            mutable_tags=tuple(self.mutable_tags),
            weights_min_mib=self.weights_min_mib,
            large_copy_mib=self.large_copy_mib,
        )
