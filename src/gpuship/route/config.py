"""The `route:` section of gpuship.yaml: which runner labels are pools and how old an audit
may be before routing stops trusting it."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator

from gpuship.config.duration import parse_duration
from gpuship.config.section import Section


class RouteConfig(Section):
    """How `gpuship route` turns the fleet inventory into runner labels."""

    pools: list[str] = Field(
        default_factory=list,
        description="Runner labels that name pools, in order of preference; a pool listed here "
        "with no audit is reported missing. Empty: every label found in the audits, the pool "
        "with most hosts first.",
    )
    runs_on: list[str] = Field(
        default=["self-hosted"],  # a literal, so the config reference shows it (pydantic copies it)
        description="Labels put before the chosen pool in each `runs-on` list; `[]` for "
        "Actions Runner Controller scale sets, which carry no `self-hosted` label.",
    )
    max_audit_age: str = Field(
        default="24h",
        description="An audit older than this (90s, 30m, 24h, 7d) is stale.",
    )
    stale_audits: Literal["unknown", "fail"] = Field(
        default="unknown",
        description="A stale or missing audit: treat the host as unknown (left out of the pool, "
        "with a warning) or fail the route.",
    )

    @field_validator("max_audit_age")
    @classmethod
    def _valid_age(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def max_age(self) -> timedelta:
        return parse_duration(self.max_audit_age)
