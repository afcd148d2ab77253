"""`gpuship history`: the releases recorded for a repository (or one tag), read once from the
registry, and their report, newest first."""

from __future__ import annotations

from dataclasses import dataclass

from gpuship.reference import Reference
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import explain, gone_digests, load_history
from gpuship.release.record import ReleaseRecord
from gpuship.release.report import record_findings
from gpuship.release.result import HistoryResult
from gpuship.release.rules import RULES
from gpuship.release.trust import Trust, chain_breaks
from gpuship.report import Report, Table
from gpuship.report.catalog import rules_by_id

# How the kind column marks a release that is not complete.
_STATE = {"intent": "UNFINISHED", "abandoned": "abandoned"}


@dataclass(frozen=True)
class HistoryListing:
    """What the registry says of `reference`'s releases."""

    reference: Reference  # REGISTRY/REPO, or REGISTRY/REPO:TAG for one tag
    records: tuple[ReleaseRecord, ...]  # oldest first; those that moved the tag, if one is named
    shown: tuple[ReleaseRecord, ...]  # newest first, at most the limit
    current: str | None  # the digest the tag points at now
    placed: ReleaseRecord | None  # the newest record that left it there
    gone: frozenset[str]  # digests the records shown name that the repository no longer holds
    # Records never followed (`release/trust.py`), with why: listed, marked, and a finding.
    doubts: tuple[tuple[ReleaseRecord, str], ...] = ()

    def doubted(self, record: ReleaseRecord) -> bool:
        """Whether `record` is one of the records never followed."""
        return any((record.id, record.state) == (r.id, r.state) for r, _ in self.doubts)


def read_listing(
    client: RegistryClient, reference: Reference, config: ReleaseConfig, limit: int
) -> HistoryListing:
    """Read the records (`history-limit` newest), the tag's digest and the digests gone."""
    repo = reference.repository
    trust = Trust.of(config.signatures)
    history = load_history(
        client, repo, config.history_tag, newest=config.history_limit, keys=trust.keys
    )
    # Tags are explained by the records that are followed only (`release/trust.py`).
    vetted, doubts = history.vetted(config.history_tag, trust)
    doubts += chain_breaks(vetted.entries)
    doubted = {(record.id, record.state) for record, _ in doubts}
    head = client.head_manifest(reference) if reference.tag is not None else None
    current = head.digest if head is not None else None
    # Unfinished releases (running, or interrupted) are listed too: they may have moved tags;
    # and abandoned ones (undone or superseded), which moved nothing that stays.
    records = sorted([*history.entries, *history.abandoned], key=lambda r: (r.time, r.id))
    placed = None
    if reference.tag is not None:
        records = [r for r in records if any(c.tag == reference.tag for c in r.tags)]
        live = [r for r in vetted.entries if any(c.tag == reference.tag for c in r.tags)]
        live = [r for r in live if (r.id, r.state) not in doubted]
        placed = explain(live, reference.tag, current) if current else None
    shown = list(reversed(records))[: max(limit, 0)]
    gone = gone_digests(client, repo, shown)  # only the records shown: the limit bounds it
    return HistoryListing(
        reference, tuple(records), tuple(shown), current, placed, gone, tuple(doubts)
    )


def history_report(command: str, listing: HistoryListing) -> Report:
    """The records shown as a table and as JSON, the headline saying what is unfinished,
    abandoned or gone and who put the tag where it is, and the newest complete release."""
    reference = listing.reference
    report = Report(command=command, subject=str(reference), rules=rules_by_id(RULES))
    for finding in record_findings(str(reference.repository), listing.doubts):
        report.add(finding)
    report.tables.append(
        Table(
            "Releases",
            ("release", "time", "kind", "actor", "digest", "tags"),
            tuple(_row(record, listing) for record in listing.shown),
        )
    )
    report.result = HistoryResult(
        repository=str(reference.repository),
        tag=reference.tag,
        current_digest=listing.current,
        current_release=listing.placed.id if listing.placed is not None else None,
        records=listing.shown,
        gone=tuple(sorted(listing.gone)),
    )
    report.headline = _headline(listing)
    complete = [record for record in listing.shown if record.state == "complete"]
    if complete:
        report.outputs["latest-release"] = complete[0].id
    return report


def _row(record: ReleaseRecord, listing: HistoryListing) -> tuple[str, ...]:
    def digest(value: str | None) -> str:
        return (
            "none" if value is None else value[:19] + (" (GONE)" if value in listing.gone else "")
        )

    tag = listing.reference.tag
    kind = record.kind if record.state == "complete" else f"{record.kind} ({_STATE[record.state]})"
    kind += " (NOT FOLLOWED)" if listing.doubted(record) else ""
    return (
        record.id,
        record.time.isoformat(timespec="seconds"),
        kind,
        record.actor or "-",
        digest(record.digest),
        ", ".join(
            f"{c.tag}: {digest(c.before)} -> {digest(c.after)} ({c.action.value})"
            for c in record.tags
            if tag is None or c.tag == tag
        ),
    )


def _headline(listing: HistoryListing) -> str:
    records, reference, gone = listing.records, listing.reference, listing.gone
    unfinished = sum(record.state == "intent" for record in records)
    abandoned = sum(record.state == "abandoned" for record in records)
    headline = f"{len(records)} releases recorded for {reference}" + (
        f" ({unfinished} unfinished: under way, or interrupted; the same command run again "
        "completes one)"
        if unfinished
        else ""
    )
    headline += f" ({abandoned} abandoned: undone or superseded)" if abandoned else ""
    headline += (
        f"; {len(gone)} digests they name are GONE from the repository (a rollback to one is "
        "refused)"
        if gone
        else ""
    )
    if listing.current is not None:
        headline += f"; {reference.tag} is at {listing.current}"
        headline += (
            f", put there by release {listing.placed.id}"
            if listing.placed is not None
            else ", which no recorded release put there"
        )
    return headline
