"""The `release:` section of gpuship.yaml: tag policy and retention.

Patterns are Python regular expressions matched against the whole tag (`re.fullmatch`).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from gpuship.config.section import Section

# Version-like tags are immutable by default: 1.4.0, v2.0.1, 1.4.0-cuda12.4, 2.1.0rc1+build.5.
DEFAULT_IMMUTABLE = (r"v?[0-9]+\.[0-9]+\.[0-9]+([-+._][0-9A-Za-z._+-]*|[a-z]+[0-9]*)?",)
# Names that exist to move, plus major / major.minor aliases (docker/metadata-action style).
DEFAULT_FLOATING = (
    "latest",
    "stable",
    "prod",
    "production",
    "staging",
    "edge",
    "nightly",
    r"v?[0-9]+",
    r"v?[0-9]+\.[0-9]+",
)


def _check_patterns(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{pattern!r} is not a valid regular expression: {error}") from None
    return patterns


class TagPolicyConfig(Section):
    """Which tags may never change once published, and which exist to be moved."""

    immutable: list[str] = Field(
        default_factory=lambda: list(DEFAULT_IMMUTABLE),
        description="Regexes (full match) of tags that are never overwritten once pushed.",
    )
    floating: list[str] = Field(
        default_factory=lambda: list(DEFAULT_FLOATING),
        description="Regexes (full match) of tags that promote may move; their moves are recorded.",
    )

    @field_validator("immutable", "floating")
    @classmethod
    def _valid_patterns(cls, value: list[str]) -> list[str]:
        return _check_patterns(value)


class KeepRule(Section):
    """Keep some of the tags matching `pattern`: the newest N and/or those younger than D days."""

    pattern: str = Field(description="Regex (full match) of the tags this rule governs.")
    newest: int | None = Field(
        default=None, ge=0, description="Keep this many of the newest matching tags."
    )
    younger_than_days: float | None = Field(
        default=None, ge=0, description="Keep matching tags created less than this many days ago."
    )

    @field_validator("pattern")
    @classmethod
    def _valid_pattern(cls, value: str) -> str:
        return _check_patterns([value])[0]


class RetentionConfig(Section):
    """What `gpuship prune` may delete. Tags matched by no keep rule are never touched."""

    keep: list[KeepRule] = Field(
        default_factory=list,
        description="Rules over the tags that prune may delete; a tag kept by any rule stays.",
    )
    protect: list[str] = Field(
        default_factory=list,
        description="Regexes of tags never deleted (floating and immutable tags are added).",
    )
    protect_immutable: bool = Field(
        default=False,
        description="Also protect every tag matching `release.tags.immutable`.",
    )
    # 5: a plain rollback needs only the newest move's previous digest; the rest cover a bad
    # release found after more releases landed on it (`rollback --to` past them) and undoing
    # a rollback (itself a release of the tag). A kept target is a whole image, so the cost
    # is bounded: 5 digests per floating tag besides its current one when each release starts
    # where the one before left it (docs/operations/registry-access.md#retention).
    keep_releases: int = Field(
        default=5,
        ge=0,
        description=(
            "Never delete a rollback target of a floating tag's newest N releases: the digest "
            "each moved the tag from (`rollback`) and its own (`rollback --to RELEASE`). Older "
            "targets are not kept (0: none)."
        ),
    )

    @field_validator("protect")
    @classmethod
    def _valid_patterns(cls, value: list[str]) -> list[str]:
        return _check_patterns(value)


class SignaturesConfig(Section):
    """Who may write release records: their signatures, and whether one is required."""

    public_keys: list[str] = Field(
        default_factory=list,
        description=(
            "PEM public keys (EC P-256, cosign's kind) whose signatures on release records "
            "are trusted; records are signed with the private key in GPUSHIP_SIGNING_KEY."
        ),
    )
    required: bool = Field(
        default=False,
        description=(
            "Follow and complete only records signed by one of `public-keys`: rollback, "
            "history's explanations and a re-run ignore any other (history reports it)."
        ),
    )

    @field_validator("public_keys")
    @classmethod
    def _valid_keys(cls, value: list[str]) -> list[str]:
        from gpuship.release.signing import public_key

        for number, pem in enumerate(value, 1):
            try:
                public_key(pem)
            except ValueError as error:
                raise ValueError(f"key {number}: {error}") from None
        return value

    @model_validator(mode="after")
    def _keys_when_required(self) -> SignaturesConfig:
        if self.required and not self.public_keys:
            raise ValueError("required: true needs at least one key in public-keys")
        return self


class ReleaseConfig(Section):
    """Promotion, release history and retention settings."""

    tags: TagPolicyConfig = Field(default_factory=TagPolicyConfig)
    signatures: SignaturesConfig = Field(default_factory=SignaturesConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    history_tag: str = Field(
        default="gpuship.releases",
        # A release's intent tag is `<history-tag>.<release id>.intent` (31 more characters;
        # its closing tag, `.closed`, as many), and a tag is at most 128.
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,96}$",
        description=(
            "Prefix of the release record tags: each release is stored once under "
            "`<history-tag>.<release id>` in the released repository, never rewritten (and, "
            "while it runs, its intent under `<history-tag>.<release id>.intent`). The tag "
            "itself is read as the history index older gpuship versions kept. A release closed "
            "as abandoned is marked under `<history-tag>.<release id>.closed`."
        ),
    )
    consistency_window: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description=(
            "Seconds a release keeps reading a tag it wrote while the tag still reads as it was "
            "before (an eventually consistent registry: replicated, behind a CDN, geo-"
            "replicated ACR) before it concludes the write did not land; 0: one read."
        ),
    )
    contention_wait: float = Field(
        default=60.0,
        ge=0,
        le=600,
        description=(
            "Seconds a release that creates an immutable tag waits for a later release "
            "creating the same tag at another digest to say whether it gave way (both stored "
            "their intent; the earlier one publishes the tag) before failing with nothing "
            "written."
        ),
    )
    history_limit: int = Field(
        default=500,
        ge=1,
        description=(
            "Most release records `rollback`, `history` and `prune` read (the newest); older "
            "records stay in the registry. `prune` still reads every unfinished release "
            "(an intent without its record), however old, and never deletes what it names."
        ),
    )
