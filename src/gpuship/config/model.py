"""The root of `gpuship.yaml`: the keys every command shares, and the root model assembled
from them and the stages' sections.

Each stage defines its section model in its own `config.py`; `gpuship.cli.config_catalog` names
the key that holds each (a `StageSection`) and calls `root_model`. This package imports no
stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from pydantic import Field, create_model

from gpuship.config.locate import DEFAULT_DEADLINE_S, DEFAULT_FAIL_ON
from gpuship.config.section import Section, SectionT, SeverityName, StageSection
from gpuship.limits import Limits

# What the root model's JSON Schema says of itself (`gpuship schema`, the config reference).
_ROOT_DESCRIPTION = "Everything `gpuship.yaml` may hold; all sections are optional."


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
    """The keys of `gpuship.yaml` every command shares. A validated config is an instance of
    the subclass `root_model` makes, which adds the stages' sections; read one with
    `section`."""

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

    def section(self, model: type[SectionT]) -> SectionT:
        """The value of the key whose type is `model`: `config.section(VerifyConfig)`,
        `config.section(list[ImageConfig])`, `config.section(Limits)`."""
        for name, info in type(self).model_fields.items():
            if info.annotation == model:
                # pydantic validated the field as `model`: the cast only tells mypy so.
                return cast(SectionT, getattr(self, name))
        raise LookupError(f"gpuship.yaml has no section of type {model}")


def root_model(sections: Sequence[StageSection[Any]]) -> type[GpushipConfig]:
    """`GpushipConfig` with the stages' sections as keys, in their order, then `limits:`
    (where the schema has always listed it). Each model appears once, so `section` finds it."""
    fields: dict[str, Any] = {
        section.key: (section.model, Field(default_factory=section.default or section.model))
        for section in sections
    }
    fields["limits"] = (
        Limits,
        Field(
            default_factory=Limits,
            description="Bounds on sizes, depths, counts and lengths of everything gpuship "
            "reads (hostile input ends in a clear error or finding naming the limit).",
        ),
    )
    shared = GpushipConfig.model_fields
    keys = [info.alias or name for name, info in shared.items()]
    keys += [section.key for section in sections] + ["limits"]
    types = [info.annotation for info in shared.values()]
    types += [model for model, _ in fields.values()]
    if len(set(keys)) < len(keys) or any(types.count(model) > 1 for model in types):
        raise ValueError(f"config sections need distinct keys and types: {keys}, {types}")
    return create_model(
        "GpushipConfig",
        __base__=GpushipConfig,
        __doc__=_ROOT_DESCRIPTION,
        __module__=__name__,
        **fields,
    )
