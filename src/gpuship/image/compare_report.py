"""The Report of `gpuship inspect --compare REF`: the comparison as tables, its headline, and
the candidate's findings with the growth budget's. Pure."""

from __future__ import annotations

from gpuship.image import result as C
from gpuship.image import rules
from gpuship.image.compare import Judged, compare, growth_finding
from gpuship.image.config import ImageStageConfig
from gpuship.report import Report, Table
from gpuship.report.catalog import rules_by_id
from gpuship.units import human_size

_CREATED_BY = 80


def signed_size(delta: int) -> str:
    """+1.5 KiB, -2.0 MiB, +0 B."""
    return ("-" if delta < 0 else "+") + human_size(abs(delta))


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}%"


def _index(value: int | None) -> str:
    return "" if value is None else str(value)


def _size_table(result: C.ImageComparison) -> Table:
    new, old, size = result.candidate, result.reference, result.size
    return Table(
        title="Size",
        headers=("", "reference", "candidate", "delta", "percent"),
        rows=(
            (
                "compressed",
                human_size(old.compressed),
                human_size(new.compressed),
                signed_size(size.compressed_delta),
                _percent(size.compressed_percent),
            ),
            (
                "uncompressed",
                human_size(old.uncompressed),
                human_size(new.uncompressed),
                signed_size(size.uncompressed_delta),
                _percent(size.uncompressed_percent),
            ),
            ("layers", str(old.layers), str(new.layers), f"{result.shared_layers} shared", ""),
        ),
    )


def _tables(result: C.ImageComparison) -> list[Table]:
    tables = [_size_table(result)]
    candidates = [
        Table(
            title="Layers added, removed or changed",
            headers=("change", "candidate", "reference", "size", "delta", "created by"),
            rows=tuple(
                (
                    row.change,
                    _index(row.candidate_index),
                    _index(row.reference_index),
                    human_size(
                        row.candidate_size
                        if row.candidate_index is not None
                        else row.reference_size
                    ),
                    signed_size(row.candidate_size - row.reference_size),
                    row.created_by[:_CREATED_BY],
                )
                for row in result.layers
            ),
        ),
        Table(
            title="Largest files added or grown",
            headers=("change", "path", "size", "delta", "layer"),
            rows=tuple(
                (
                    row.change,
                    row.path,
                    human_size(row.candidate_size),
                    signed_size(row.candidate_size - row.reference_size),
                    str(row.layer),
                )
                for row in result.files
            ),
        ),
        Table(
            title="Packages",
            headers=("manager", "package", "change", "reference", "candidate", "where"),
            rows=tuple(
                (
                    row.manager,
                    row.name,
                    row.change,
                    row.reference_version or "",
                    row.candidate_version or "",
                    row.environment,
                )
                for row in result.packages
            ),
        ),
        Table(
            title="CUDA libraries",
            headers=("library", "from", "change", "reference", "candidate"),
            rows=tuple(
                (
                    row.library,
                    row.location,
                    row.change,
                    ", ".join(row.reference_versions),
                    ", ".join(row.candidate_versions),
                )
                for row in result.cuda_libraries
            ),
        ),
        _torch_table(result),
        Table(
            title="Weights",
            headers=("path", "format", "change", "size", "delta"),
            rows=tuple(
                (
                    row.path,
                    row.format,
                    row.change,
                    human_size(row.candidate_size or row.reference_size),
                    signed_size(row.candidate_size - row.reference_size),
                )
                for row in result.weights
            ),
        ),
        Table(
            title="Image findings",
            headers=("change", "rule", "severity", "message"),
            rows=tuple(
                (row.change, row.rule, row.severity, row.message) for row in result.findings
            ),
        ),
    ]
    tables.extend(table for table in candidates if table.rows)
    return tables


def _torch_table(result: C.ImageComparison) -> Table:
    new, old = result.candidate_torch, result.reference_torch
    if new == old:
        return Table(title="torch", headers=(), rows=())

    def shown(torch: C.Torch | None) -> tuple[str, str]:
        return ("", "") if torch is None else (torch.version, torch.variant or "unknown")

    return Table(
        title="torch",
        headers=("", "version", "variant"),
        rows=(("reference", *shown(old)), ("candidate", *shown(new))),
    )


def _headline(result: C.ImageComparison) -> str:
    size = result.size
    counts = {change: 0 for change in ("new", "fixed")}
    for row in result.findings:
        counts[row.change] = counts.get(row.change, 0) + 1
    percent = (
        f" ({_percent(size.uncompressed_percent)})" if size.uncompressed_percent is not None else ""
    )
    return (
        f"{result.candidate.reference} against {result.reference.reference}: "
        f"{signed_size(size.uncompressed_delta)}{percent} uncompressed, "
        f"{signed_size(size.compressed_delta)} compressed; "
        f"{result.shared_layers} of {result.candidate.layers} layers shared; "
        f"{len(result.packages)} package changes; findings {counts['new']} new, "
        f"{counts['fixed']} fixed"
    )


def compare_report(
    command: str, candidate: Judged, reference: Judged, config: ImageStageConfig
) -> Report:
    """The Report of `inspect --compare`: the candidate's own findings plus GSI803."""
    result = compare(candidate, reference, config)
    findings = list(candidate.judgement.findings)
    rule_set = dict(candidate.judgement.rules)
    over = growth_finding(result)
    if over is not None:
        findings.append(over)
        rule_set[over.rule] = rules_by_id(rules.RULES)[over.rule]
    return Report(
        command=command,
        findings=findings,
        result=result,
        rules=rule_set,
        tables=_tables(result),
        outputs={
            "digest": result.candidate.manifest_digest,
            "reference-digest": result.reference.manifest_digest,
            "size-bytes": str(result.candidate.uncompressed),
            "size-delta-bytes": str(result.size.uncompressed_delta),
            "compressed-delta-bytes": str(result.size.compressed_delta),
            "new-findings": str(sum(row.change == "new" for row in result.findings)),
        },
        headline=_headline(result),
    )
