"""The host audit: NVML readings + container side + system, as one versioned document.

`gpuship audit` writes it (the JSON result), `gpuship verify` judges it and `gpuship fleet`
merges many of them, possibly from runners on other gpuship versions. The models are strict
(unknown keys are an error), so `schema_version` changes with any change to the fields;
`audit.schema.json` beside this module is the published schema and a test keeps it equal to
the model.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuship import __version__
from gpuship.compat.container import ContainerReadings, SystemReading
from gpuship.compat.readings import NvmlReadings
from gpuship.documents import read_json
from gpuship.errors import InputError
from gpuship.limits import DEFAULT_LIMITS, Limits

AUDIT_SCHEMA_VERSION = 3
# Version 1 lacks the CDI fields of version 2 (spec driver versions, refresh units), version 2
# the readiness readings and cgroup driver of version 3; they read as unknown, so audits
# published by older runners stay usable.
READABLE_SCHEMA_VERSIONS = (1, 2, 3)
SCHEMA_PATH = Path(__file__).with_name("audit.schema.json")


class RunnerIdentity(BaseModel):
    """Which machine this is, as a fleet knows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hostname: str
    runner_name: str | None = Field(default=None, description="RUNNER_NAME on GitHub runners.")
    labels: list[str] = Field(default_factory=list, description="Runner labels given to audit.")

    @property
    def display_name(self) -> str:
        """The name a fleet table shows: first label, else runner name, else hostname."""
        if self.labels:
            return ",".join(self.labels)
        return self.runner_name or self.hostname


class HostAudit(BaseModel):
    """One host's readings; the document `gpuship audit` writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1, 2, 3] = 3
    tool_version: str = __version__
    taken_at: str = Field(description="UTC time of the reading, ISO 8601.")
    runner: RunnerIdentity
    system: SystemReading
    nvml: NvmlReadings
    container: ContainerReadings


def new_audit(
    nvml: NvmlReadings,
    container: ContainerReadings,
    system: SystemReading,
    runner: RunnerIdentity,
    taken_at: datetime,
) -> HostAudit:
    """Assemble the audit of the readings `runner` took at `taken_at` (UTC): the caller reads
    the host and the clock (`verify/host.py`), so this stays pure."""
    return HostAudit(
        taken_at=taken_at.isoformat(timespec="seconds"),
        runner=runner,
        system=system,
        nvml=nvml,
        container=container,
    )


def audit_json_schema() -> dict[str, Any]:
    """The JSON Schema of the audit document (what `audit.schema.json` holds)."""
    schema = HostAudit.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"gpuship host audit, schema_version {AUDIT_SCHEMA_VERSION}"
    return schema


def load_audit(path: Path, limits: Limits = DEFAULT_LIMITS) -> HostAudit:
    """Read an audit file: the bare document or gpuship's JSON report with it as `result`."""
    data = read_json(path, "audit file", limits)
    if isinstance(data, dict) and data.get("tool") == "gpuship" and "result" in data:
        data = data["result"]
    return audit_from_document(data, str(path))


def audit_from_document(data: object, where: str) -> HostAudit:
    """Validate an audit document read from `where` (a file, an inventory entry)."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and version not in (None, *READABLE_SCHEMA_VERSIONS):
        raise InputError(
            f"{where}: audit schema_version {version!r} is not supported "
            f"(this gpuship reads {', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); "
            "re-run 'gpuship audit' with this version"
        )
    try:
        return HostAudit.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        at = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise InputError(f"{where}: not a gpuship audit: {at}: {first['msg']}") from None
