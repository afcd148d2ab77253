"""`gpuship lock`: pin every base image tag the matrix uses to its digest in gpuship.lock.

With `check`, nothing is written and every difference is a GSB201 finding (the lock is
missing, names a base no cell uses, lacks one a cell uses, or pins a digest the tag no
longer points to).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuship.matrix import rules
from gpuship.matrix.cells import base_references
from gpuship.matrix.lockfile import lock_changes, read_lock, render_lock, write_lock
from gpuship.matrix.project import Project, check_matrix_size
from gpuship.matrix.result import LockResult
from gpuship.matrix.targets import image_targets
from gpuship.reference import parse_reference
from gpuship.report import Finding, Location, Report, Severity, Table
from gpuship.report.catalog import rules_by_id

if TYPE_CHECKING:
    from gpuship.registry.client import RegistryClient


def lock_bases(
    command: str,
    project: Project,
    *,
    check: bool,
    client: RegistryClient,
) -> Report:
    """Resolve the bases through `client`; write the lock, or compare (`check`)."""
    check_matrix_size(project.images, project.limits)
    references = sorted(
        {
            ref
            for image in project.images
            for ref in base_references(
                image,
                image_targets(image, project.directory, project.limits),
                project.limits.matrix_max_cells,
            )
        }
    )
    current = {ref: client.resolve_digest(parse_reference(ref)) for ref in references}
    existing = read_lock(project.lock_path, project.limits)
    changes = lock_changes(existing.bases if existing else {}, current)
    report = Report(command=command, rules=rules_by_id(rules.RULES))
    report.result = LockResult(
        str(project.lock_path), current, tuple(change.describe() for change in changes)
    )
    report.tables.append(
        Table(
            title="Locked bases",
            headers=("base", "digest"),
            rows=tuple((ref, digest) for ref, digest in current.items()),
        )
    )
    if check:
        location = Location(file=str(project.lock_path))
        if existing is None:
            report.add(
                Finding(
                    rules.LOCK_STALE.id, Severity.ERROR, "gpuship.lock does not exist", location
                )
            )
        for change in changes:
            report.add(Finding(rules.LOCK_STALE.id, Severity.ERROR, change.describe(), location))
        report.failed = existing is None or bool(changes)
        report.headline = (
            f"gpuship.lock is stale: {len(changes)} change(s)"
            if report.failed
            else f"gpuship.lock is current ({len(current)} bases)"
        )
        return report
    if existing is None or project.lock_path.read_text(encoding="utf-8") != render_lock(current):
        write_lock(project.lock_path, current)
    report.headline = f"locked {len(current)} bases ({len(changes)} changed)"
    return report
