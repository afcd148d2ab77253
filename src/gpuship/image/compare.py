"""Compare a candidate image with a reference: what grew, what was added, what changed.

Pure: two analysed and judged images in, the comparison, its findings and tables out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from gpuship.image import paths, rules
from gpuship.image import result as C
from gpuship.image.analysis import ImageAnalysis, LayerSummary
from gpuship.image.config import ImageStageConfig
from gpuship.image.packages import PIP, InstalledPackage
from gpuship.image.report import Judgement
from gpuship.image.tarwalk import REGULAR
from gpuship.report import Finding
from gpuship.report.catalog import rules_by_id
from gpuship.units import human_size

MIB = 1 << 20
LISTED_FILES = 20
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Judged:
    """One image as `inspect` reads and judges it."""

    analysis: ImageAnalysis
    judgement: Judgement


def _side(judged: Judged) -> C.ComparedImage:
    analysis = judged.analysis
    return C.ComparedImage(
        reference=analysis.image.reference,
        manifest_digest=analysis.image.manifest_digest,
        platform=analysis.image.platform,
        compressed=analysis.compressed_size,
        uncompressed=analysis.content_size,
        layers=len(analysis.layers),
    )


def _percent(delta: int, base: int) -> float | None:
    return round(100 * delta / base, 2) if base else None


def size_change(candidate: C.ComparedImage, reference: C.ComparedImage) -> C.SizeChange:
    """The deltas of the totals, candidate minus reference."""
    compressed = candidate.compressed - reference.compressed
    uncompressed = candidate.uncompressed - reference.uncompressed
    return C.SizeChange(
        compressed_delta=compressed,
        uncompressed_delta=uncompressed,
        compressed_percent=_percent(compressed, reference.compressed),
        uncompressed_percent=_percent(uncompressed, reference.uncompressed),
    )


def _layer_row(change: str, new: LayerSummary | None, old: LayerSummary | None) -> C.LayerChange:
    made = new or old
    return C.LayerChange(
        change=change,
        candidate_index=new.index if new else None,
        reference_index=old.index if old else None,
        candidate_digest=new.digest if new else None,
        reference_digest=old.digest if old else None,
        candidate_size=new.content_size if new else 0,
        reference_size=old.content_size if old else 0,
        created_by=made.created_by if made else "",
    )


def layer_changes(
    candidate: Sequence[LayerSummary], reference: Sequence[LayerSummary]
) -> tuple[C.LayerChange, ...]:
    """Layers only one image has. A layer of each with other digests is one row (`grown`,
    `shrunk`, or none when only the digest moved) when the same instruction made both, else
    when they sit at the same index (the classic builder names ADD's content in the
    instruction, so its instruction changes with the content); the rest are added/removed."""
    shared = {layer.digest for layer in candidate} & {layer.digest for layer in reference}
    new = [layer for layer in candidate if layer.digest not in shared]
    old = [layer for layer in reference if layer.digest not in shared]
    pairs: list[tuple[LayerSummary, LayerSummary]] = []
    matchers: tuple[Callable[[LayerSummary, LayerSummary], bool], ...] = (
        lambda a, b: a.created_by == b.created_by,
        lambda a, b: a.index == b.index,
    )
    for same in matchers:
        for layer in list(new):
            twin = next((other for other in old if same(layer, other)), None)
            if twin is not None:
                pairs.append((layer, twin))
                new.remove(layer)
                old.remove(twin)
    rows = [
        _layer_row("grown" if a.content_size > b.content_size else "shrunk", a, b)
        for a, b in pairs
        if a.content_size != b.content_size
    ]
    rows.extend(_layer_row("added", layer, None) for layer in new)
    rows.extend(_layer_row("removed", None, layer) for layer in old)
    return tuple(sorted(rows, key=lambda row: (_layer_order(row), row.change)))


def _layer_order(row: C.LayerChange) -> int:
    return row.candidate_index if row.candidate_index is not None else 1 << 30


def file_changes(candidate: ImageAnalysis, reference: ImageAnalysis) -> tuple[C.FileChange, ...]:
    """The largest files the candidate added or grew (`LISTED_FILES`), largest growth first."""
    before = {item.path: item.size for item in reference.filesystem.files if item.kind == REGULAR}
    rows = []
    for item in candidate.filesystem.files:
        if item.kind != REGULAR:
            continue
        old = before.get(item.path)
        if old is None or item.size > old:
            change = "added" if old is None else "grown"
            rows.append(C.FileChange("/" + item.path, change, item.size, old or 0, item.layer))
    rows.sort(key=lambda row: (row.reference_size - row.candidate_size, row.path))
    return tuple(rows[:LISTED_FILES])


def _versions(packages: Iterable[InstalledPackage]) -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for package in packages:
        found[(package.manager, package.name, package.environment)].add(package.version)
    return {key: ", ".join(sorted(versions)) for key, versions in found.items()}


def _change(new: object, old: object) -> str | None:
    if new == old:
        return None
    return "added" if old is None else "removed" if new is None else "changed"


def package_changes(
    candidate: Iterable[InstalledPackage], reference: Iterable[InstalledPackage]
) -> tuple[C.PackageChange, ...]:
    """Packages added, removed or at another version, per manager and environment."""
    new, old = _versions(candidate), _versions(reference)
    rows = []
    for key in sorted(new.keys() | old.keys()):
        change = _change(new.get(key), old.get(key))
        if change is not None:
            manager, name, environment = key
            rows.append(
                C.PackageChange(manager, name, environment, change, new.get(key), old.get(key))
            )
    return tuple(rows)


def cuda_libraries(analysis: ImageAnalysis) -> dict[tuple[str, str], tuple[str, ...]]:
    """(library, system|wheel) -> the versions its real files state (`12.4.5.8`)."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item in analysis.filesystem.files:
        library = paths.cuda_library(item.path) if item.kind == REGULAR else None
        if library is not None:
            version = paths.library_file_version(item.path)
            found[library].update([version] if version else [])
    return {key: tuple(sorted(versions)) for key, versions in found.items()}


def cuda_library_changes(
    candidate: ImageAnalysis, reference: ImageAnalysis
) -> tuple[C.CudaLibraryChange, ...]:
    """CUDA libraries one image has and the other not, or at other versions."""
    new, old = cuda_libraries(candidate), cuda_libraries(reference)
    rows = []
    for key in sorted(new.keys() | old.keys()):
        change = _change(new.get(key), old.get(key))
        if change is not None:
            library, location = key
            rows.append(
                C.CudaLibraryChange(library, location, change, new.get(key, ()), old.get(key, ()))
            )
    return tuple(rows)


def torch_of(analysis: ImageAnalysis) -> C.Torch | None:
    """torch's version and variant (its local version: `cu121`, `cpu`), from its dist-info.

    A torch without a local version is the default wheel of its release, whose variant the
    version alone does not tell (PyPI's Linux wheel is CUDA, others CPU): its `torch/version.py`
    then decides (`cuda = '12.4'` -> `cu124`); with neither the variant is unknown (None).
    """
    versions = sorted(
        package.version
        for package in analysis.packages
        if package.manager == PIP and package.name == "torch"
    )
    if not versions:
        return None
    version = versions[-1]
    try:
        variant = Version(version).local
    except InvalidVersion:
        variant = None
    if variant is None:
        cuda = [e.version for e in analysis.cuda_evidence if e.source == "torch"]
        variant = "cu" + cuda[0].replace(".", "") if cuda else None
    return C.Torch(version, variant)


def weights_changes(
    candidate: ImageAnalysis, reference: ImageAnalysis
) -> tuple[C.WeightsChange, ...]:
    """Weights files added, removed, or of another size."""
    new = {hit.path: hit for hit in candidate.weights}
    old = {hit.path: hit for hit in reference.weights}
    rows = []
    for path in sorted(new.keys() | old.keys()):
        a, b = new.get(path), old.get(path)
        change = _change(a and a.size, b and b.size)
        either = a or b
        if change is not None and either is not None:
            rows.append(
                C.WeightsChange(
                    "/" + path, either.format, change, a.size if a else 0, b.size if b else 0
                )
            )
    return tuple(rows)


def _finding_key(finding: Finding) -> tuple[str, str]:
    # Figures move with any change (sizes, percentages): the same rule with the same words
    # around them is the same finding, so a layer grown by a byte is not "fixed" and "new".
    return finding.rule, _NUMBER.sub("#", finding.message)


def finding_changes(
    candidate: Sequence[Finding], reference: Sequence[Finding]
) -> tuple[C.FindingChange, ...]:
    """Each of the candidate's findings, new or unchanged, and each of the reference's that
    the candidate no longer has (fixed)."""
    old = {_finding_key(finding) for finding in reference}
    new = {_finding_key(finding) for finding in candidate}
    rows = [
        C.FindingChange(
            f.rule, f.severity.value, f.message, "unchanged" if _finding_key(f) in old else "new"
        )
        for f in candidate
    ]
    rows.extend(
        C.FindingChange(f.rule, f.severity.value, f.message, "fixed")
        for f in reference
        if _finding_key(f) not in new
    )
    order = {"new": 0, "fixed": 1, "unchanged": 2}
    return tuple(sorted(rows, key=lambda row: (order[row.change], row.rule, row.message)))


def growth(
    size: C.SizeChange, reference: C.ComparedImage, config: ImageStageConfig
) -> C.Growth | None:
    """The growth budget, and whether the uncompressed growth passed either of its limits."""
    budget = config.growth_max
    if budget is None:
        return None
    delta = size.uncompressed_delta
    over_percent = (
        budget.percent is not None and delta > budget.percent / 100 * reference.uncompressed
    )
    over_mib = budget.mib is not None and delta > budget.mib * MIB
    return C.Growth(budget.percent, budget.mib, over_percent or over_mib)


def compare(candidate: Judged, reference: Judged, config: ImageStageConfig) -> C.ImageComparison:
    """Everything that differs between `candidate` and `reference`."""
    new, old = candidate.analysis, reference.analysis
    new_side, old_side = _side(candidate), _side(reference)
    size = size_change(new_side, old_side)
    shared = {layer.digest for layer in new.layers} & {layer.digest for layer in old.layers}
    return C.ImageComparison(
        candidate=new_side,
        reference=old_side,
        size=size,
        shared_layers=len(shared),
        layers=layer_changes(new.layers, old.layers),
        files=file_changes(new, old),
        packages=package_changes(new.packages, old.packages),
        cuda_libraries=cuda_library_changes(new, old),
        candidate_torch=torch_of(new),
        reference_torch=torch_of(old),
        weights=weights_changes(new, old),
        findings=finding_changes(candidate.judgement.findings, reference.judgement.findings),
        growth=growth(size, old_side, config),
    )


def growth_finding(result: C.ImageComparison) -> Finding | None:
    """GSI803 when the candidate grew past `inspect.growth-max`."""
    budget = result.growth
    if budget is None or not budget.exceeded:
        return None
    limits = []
    if budget.max_percent is not None:
        limits.append(f"{budget.max_percent:g}%")
    if budget.max_mib is not None:
        limits.append(human_size(int(budget.max_mib * MIB)))
    size = result.size
    percent = (
        f" ({size.uncompressed_percent:+.2f}%)" if size.uncompressed_percent is not None else ""
    )
    rule = rules_by_id(rules.RULES)[rules.OVER_GROWTH]
    return Finding(
        rule=rule.id,
        severity=rule.severity,
        message=f"{result.candidate.reference} grew by {human_size(size.uncompressed_delta)}"
        f"{percent} over {result.reference.reference}; budget {' and '.join(limits)}",
    )
