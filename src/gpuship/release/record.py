"""The release record: what a promote or rollback did, and how to undo it.

A record is JSON (pydantic model, read back from registries) holding time, actor, source commit
and run URL (from the GITHUB_* variables of the job), the image digest, each tag's before and
after digest, and the digest of the gpuship config that governed the run.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuship.release.policy import TagAction, TagKind, TagStep

RECORD_SCHEMA: Literal["gpuship.release/v1"] = "gpuship.release/v1"

# Where a run's record ended: stored; not stored (the release failed first); removed (by the
# undo); unknown (its write or removal got no answer); none (nothing to record); intent (the
# release did not finish and its intent record stays: history lists it as unfinished, and the
# same command run again completes it).
RecordState = Literal["stored", "not stored", "removed", "unknown", "none", "intent"]


class TagChange(BaseModel):
    """One tag in a release: its kind, the digest before and after, and what was done."""

    model_config = ConfigDict(frozen=True)

    tag: str
    kind: TagKind
    before: str | None
    after: str
    action: TagAction

    @classmethod
    def from_step(cls, step: TagStep) -> TagChange:
        """The record entry for a planned step."""
        return cls(
            tag=step.tag, kind=step.kind, before=step.before, after=step.after, action=step.action
        )


class ReleaseRecord(BaseModel):
    """One promotion or rollback of one image to tags of one repository."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: Literal["gpuship.release/v1"] = Field(default=RECORD_SCHEMA, alias="schema")
    id: str
    kind: Literal["promote", "rollback"]
    time: datetime
    actor: str | None = None
    commit: str | None = None
    run_url: str | None = None
    repository: str
    source: str
    digest: str
    media_type: str
    tags: list[TagChange]
    config_digest: str | None = None
    rollback_of: str | None = None
    # "intent": stored before any tag moves, saying what the release is about to do; the same
    # record as "complete" is stored once every tag is written. An intent with no complete
    # record is a release still running, or one that was interrupted (history says so).
    # "abandoned": stored under the record tag instead of "complete" to close an intent whose
    # release left nothing: undone, or superseded by later releases of its tags (history lists
    # it as abandoned; nothing protects its digest; it is never completed).
    state: Literal["intent", "complete", "abandoned"] = "complete"

    @field_validator("time")
    @classmethod
    def _utc_when_unqualified(cls, value: datetime) -> datetime:
        """A time without an offset (RFC 3339 section 5.6 makes it mandatory; gpuship always
        writes one) is read as UTC, as the release id that names the record is: records
        are ordered by time, and a naive time cannot be compared with the others."""
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value

    def as_state(self, state: Literal["intent", "complete", "abandoned"]) -> ReleaseRecord:
        """The same release in another state (the intent and the complete record differ only
        there, so any run that completes a release stores the same bytes)."""
        return self.model_copy(update={"state": state})

    def to_json(self) -> bytes:
        """Compact JSON with the `schema` key spelled as stored."""
        return self.model_dump_json(by_alias=True).encode()


def new_release_id(now: datetime) -> str:
    """A sortable, unique id: UTC time to the second plus 6 random hex digits."""
    return now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def provenance(environ: Mapping[str, str]) -> dict[str, str | None]:
    """Actor, commit and run URL from the GitHub Actions environment (None outside it)."""
    server = environ.get("GITHUB_SERVER_URL", "https://github.com")
    repository = environ.get("GITHUB_REPOSITORY")
    run_id = environ.get("GITHUB_RUN_ID")
    run_url = None
    if repository and run_id:
        run_url = f"{server}/{repository}/actions/runs/{run_id}"
        if environ.get("GITHUB_RUN_ATTEMPT"):
            run_url += f"/attempts/{environ['GITHUB_RUN_ATTEMPT']}"
    return {
        "actor": environ.get("GITHUB_ACTOR") or environ.get("USER") or None,
        "commit": environ.get("GITHUB_SHA") or None,
        "run_url": run_url,
    }


def rollback_commands(repository: str, tag: str, digest: str) -> dict[str, str]:
    """Commands that point `repository:tag` back at `digest`, for gpuship and three other tools.

    `imagetools create` needs `--prefer-index=false` or it wraps a single manifest in a new
    index (new digest); skopeo needs `--all --preserve-digests` to copy an index unchanged
    (docker/buildx imagetools docs; containers/skopeo docs/skopeo-copy.1.md).
    """
    return {
        "gpuship": f"gpuship rollback {repository}:{tag} --to {digest}",
        "crane": f"crane tag {repository}@{digest} {tag}",
        "skopeo": (
            f"skopeo copy --all --preserve-digests docker://{repository}@{digest} "
            f"docker://{repository}:{tag}"
        ),
        "imagetools": (
            f"docker buildx imagetools create --prefer-index=false --tag {repository}:{tag} "
            f"{repository}@{digest}"
        ),
    }


def render_instructions(record: ReleaseRecord) -> str:
    """Markdown rollback instructions for every tag the release moved."""
    lines = [
        f"# Rollback instructions for release {record.id}",
        "",
        f"- repository: `{record.repository}`",
        f"- {record.kind} of `{record.digest}` at {record.time.isoformat()}"
        + (f" by {record.actor}" if record.actor else ""),
    ]
    if record.run_url:
        lines.append(f"- run: {record.run_url}")
    if record.commit:
        lines.append(f"- commit: `{record.commit}`")
    lines.append("")
    moved = [change for change in record.tags if change.action is TagAction.MOVE]
    created = [change for change in record.tags if change.action is TagAction.CREATE]
    if not moved:
        lines.append("No floating tag was moved: nothing to roll back.")
    for change in moved:
        assert change.before is not None
        commands = rollback_commands(record.repository, change.tag, change.before)
        lines += [
            f"## `{change.tag}`: `{change.before}` -> `{change.after}`",
            "",
            "Roll back with gpuship: to the digest before the tag's last recorded move, or",
            "explicitly to the digest this release replaced:",
            "",
            "```sh",
            f"gpuship rollback {record.repository}:{change.tag}",
            commands["gpuship"],
            "```",
            "",
            "Or, without gpuship:",
            "",
            "```sh",
            commands["crane"],
            commands["skopeo"],
            commands["imagetools"],
            "```",
            "",
        ]
    floating_new = [c for c in created if c.kind is TagKind.FLOATING]
    if floating_new:
        names = ", ".join(f"`{c.tag}`" for c in floating_new)
        lines += [
            f"Floating tags created by this release (no previous digest): {names}.",
            "",
        ]
    immutable = [c for c in created if c.kind is TagKind.IMMUTABLE]
    if immutable:
        names = ", ".join(f"`{c.tag}`" for c in immutable)
        lines += [f"Immutable tags published (never rolled back): {names}.", ""]
    return "\n".join(lines).rstrip() + "\n"
