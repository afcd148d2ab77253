"""Judge an image analysis against the `inspect:` config: findings, result data and tables,
and the Report of `gpuship inspect` made of them.

Pure: no I/O. Messages carry only figures every source agrees on (uncompressed sizes, paths,
versions), so the same image read from a registry, an archive or an OCI layout reports alike.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpuship import image_result as R
from gpuship.compat.needs import ContentCuda, image_needs
from gpuship.image import rules
from gpuship.image.analysis import Group, ImageAnalysis, WeightHit
from gpuship.image.config import ImageStageConfig
from gpuship.image.coverage import sm_targets, target_coverage
from gpuship.image.driverlibs import driver_libraries
from gpuship.image.layerscan import LIMIT_PROBLEM
from gpuship.image.weights import hub_cache_of
from gpuship.report import Finding, Location, Report, Rule, Table
from gpuship.report.catalog import rules_by_id
from gpuship.units import human_size

MIB = 1 << 20
_LISTED = 50


@dataclass(frozen=True)
class DockerfileLines:
    """The Dockerfile given with `--dockerfile` and, per layer, the line that made it."""

    path: str
    layer_lines: tuple[int | None, ...]

    def location(self, layer: int) -> Location:
        line = self.layer_lines[layer] if layer < len(self.layer_lines) else None
        return Location(file=self.path, line=line)


@dataclass(frozen=True)
class Judgement:
    """What a stage needs to build its Report from one judged image."""

    findings: list[Finding]
    rules: Mapping[str, Rule]
    result: R.ImageResult
    tables: list[Table]
    headline: str


class _Findings:
    """Collects findings, pointing each at the Dockerfile line of its layer when known."""

    def __init__(self, dockerfile: DockerfileLines | None) -> None:
        self.items: list[Finding] = []
        self._dockerfile = dockerfile

    def add(self, rule_id: str, message: str, layer: int | None = None) -> None:
        rule = rules_by_id(rules.RULES)[rule_id]
        location = None
        if self._dockerfile is not None:
            location = (
                self._dockerfile.location(layer)
                if layer is not None
                else Location(file=self._dockerfile.path)
            )
        self.items.append(
            Finding(rule=rule.id, severity=rule.severity, message=message, location=location)
        )


def _layers_text(layers: Sequence[int]) -> str:
    return ", ".join(str(index) for index in layers)


def _group_findings(out: _Findings, rule_id: str, groups: Sequence[Group], what: str) -> None:
    for group in groups:
        out.add(
            rule_id,
            f"{what} '{group.kind}': {group.files} files, {human_size(group.size)} "
            f"(layer {_layers_text(group.layers)}; e.g. /{group.examples[0]})",
            group.layers[0],
        )


def _weights_findings(out: _Findings, analysis: ImageAnalysis, config: ImageStageConfig) -> None:
    """One finding per directory and layer (a sharded model is one problem, not thirty);
    files in a model hub cache are left to the hub-cache finding."""
    minimum = config.weights_min_mib * MIB
    groups: dict[tuple[str, int], list[WeightHit]] = defaultdict(list)
    for weight in analysis.weights:
        if weight.size >= minimum and hub_cache_of(weight.path) is None:
            groups[(posixpath.dirname(weight.path), weight.layer)].append(weight)
    for (directory, layer), weights in sorted(groups.items()):
        if len(weights) == 1:
            (weight,) = weights
            size = human_size(weight.size)
            message = f"{weight.format} weights /{weight.path} ({size}) in layer {layer}"
        else:
            total = sum(weight.size for weight in weights)
            formats = ", ".join(sorted({weight.format for weight in weights}))
            largest = max(weights, key=lambda weight: (weight.size, weight.path))
            message = (
                f"{len(weights)} weight files ({formats}, {human_size(total)}) in /{directory} "
                f"in layer {layer}; largest /{largest.path} ({human_size(largest.size)})"
            )
        out.add(rules.WEIGHTS, message, layer)


def _waste_findings(out: _Findings, analysis: ImageAnalysis, config: ImageStageConfig) -> None:
    dive = analysis.dive
    corrected = analysis.filesystem.hidden_bytes
    floor = config.waste_floor_mib * MIB
    failing = []
    if dive.efficiency < config.lowest_efficiency:
        failing.append(f"efficiency {dive.efficiency:.4f} < {config.lowest_efficiency}")
    if (
        dive.user_wasted_percent is not None
        and dive.user_wasted_percent > config.highest_user_wasted_percent
    ):
        failing.append(
            f"user wasted {dive.user_wasted_percent:.4f} > {config.highest_user_wasted_percent}"
        )
    if (
        config.highest_wasted_mib is not None
        and dive.wasted_bytes > config.highest_wasted_mib * MIB
    ):
        failing.append(f"wasted {human_size(dive.wasted_bytes)} > {config.highest_wasted_mib} MiB")
    if failing and corrected >= floor:
        out.add(
            rules.INEFFICIENT,
            f"dive rules fail ({'; '.join(failing)}); dive wasted bytes {dive.wasted_bytes} "
            f"({human_size(dive.wasted_bytes)}), corrected waste {human_size(corrected)} "
            "not counting kept copies",
        )
    by_layers: dict[tuple[int, int, str], list[tuple[str, int]]] = defaultdict(list)
    for item in analysis.hidden:
        by_layers[(item.added_in, item.hidden_in, item.how)].append((item.path, item.size))
    for (added, hidden, how), files in sorted(by_layers.items()):
        total = sum(size for _, size in files)
        if total < floor:
            continue
        largest = sorted(files, key=lambda pair: (-pair[1], pair[0]))[:3]
        listed = ", ".join(f"/{path} ({human_size(size)})" for path, size in largest)
        out.add(
            rules.HIDDEN_FILES,
            f"{len(files)} files ({human_size(total)}) added in layer {added} are {how} in layer "
            f"{hidden}: {listed}",
            hidden,
        )


def _cuda_findings(
    out: _Findings, analysis: ImageAnalysis, config: ImageStageConfig
) -> tuple[ContentCuda, list[R.TargetCoverage]]:
    image = analysis.image
    needs = image_needs(image.reference, image.config.env, image.config.labels, analysis.scan)
    content = needs.content_cuda
    assert content is not None  # the needs of a scanned image
    for weak in content.weak_claims:
        out.add(rules.CUDA_CLAIM_WEAKER, weak.message)
    if content.unknown:
        out.add(rules.CUDA_UNKNOWN, content.unknown)
    for found in driver_libraries(analysis.filesystem.files):
        out.add(rules.DRIVER_LIBRARIES, found.message, found.layer)
    for duplicate in analysis.duplicate_cuda:
        out.add(
            rules.CUDA_DUPLICATED,
            f"{duplicate.library} is present in the system toolkit "
            f"({human_size(duplicate.system_size)}, "
            f"/{duplicate.system_paths[0]}) and in a pip wheel "
            f"({human_size(duplicate.wheel_size)}, "
            f"/{duplicate.wheel_paths[0]})",
        )
    coverages = [target_coverage(t, analysis.gpu_libraries) for t in config.targets]
    for coverage in coverages:
        if coverage.missing:
            out.add(
                rules.ARCH_MISSING,
                f"no kernel for {coverage.target} in {len(coverage.missing)} GPU libraries: "
                + ", ".join(coverage.missing[:5]),
            )
        if coverage.ptx_only:
            out.add(
                rules.ARCH_MISSING,
                f"{coverage.target} runs only by PTX JIT (slow first start) in "
                f"{len(coverage.ptx_only)} GPU libraries: " + ", ".join(coverage.ptx_only[:5]),
            )
    if analysis.gpu_libraries:
        for target in sm_targets(needs.promised_targets):
            coverage = target_coverage(target, analysis.gpu_libraries)
            if coverage.missing:
                out.add(
                    rules.ARCH_CLAIM_UNSUPPORTED,
                    f"label io.gpuship.arch-list promises {target} but "
                    + ", ".join(coverage.missing[:5])
                    + " has no kernel for it",
                )
    return content, coverages


def _gpu(analysis: ImageAnalysis, coverages: Sequence[R.TargetCoverage]) -> R.Gpu:
    libraries = analysis.gpu_libraries
    sass_union = sorted({arch for lib in libraries for arch in lib.sass}, key=_arch_number)
    ptx_union = sorted({arch for lib in libraries for arch in lib.ptx}, key=_arch_number)
    common = set(libraries[0].sass) if libraries else set()
    for library in libraries[1:]:
        common &= set(library.sass)
    return R.Gpu(
        sass=tuple(sass_union),
        ptx=tuple(ptx_union),
        sass_in_every_library=tuple(sorted(common, key=_arch_number)),
        libraries=tuple(
            R.GpuLibrary("/" + lib.path, lib.layer, lib.size, tuple(lib.sass), tuple(lib.ptx))
            for lib in libraries
        ),
        targets=tuple(coverages),
    )


def _arch_number(name: str) -> int:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else 0


def _groups(groups: Sequence[Group]) -> tuple[R.FileGroup, ...]:
    return tuple(
        R.FileGroup(g.kind, g.size, g.files, tuple(g.layers), tuple("/" + e for e in g.examples))
        for g in groups
    )


def _layers(analysis: ImageAnalysis, dockerfile: DockerfileLines | None) -> tuple[R.Layer, ...]:
    return tuple(
        R.Layer(
            index=layer.index,
            digest=layer.digest,
            diff_id=layer.diff_id,
            compression=layer.compression,
            compressed_size=layer.compressed_size,
            uncompressed_size=layer.content_size,
            tar_size=layer.uncompressed_size,
            files=layer.files,
            created_by=layer.created_by,
            dockerfile_line=dockerfile.location(layer.index).line if dockerfile else None,
            top_dirs=tuple(R.PathSize(path, size) for path, size in layer.top_dirs),
            top_files=tuple(R.PathSize(path, size) for path, size in layer.top_files),
        )
        for layer in analysis.layers
    )


def _cuda(analysis: ImageAnalysis, content: ContentCuda) -> R.Cuda:
    deciding = content.deciding
    return R.Cuda(
        effective=content.effective,
        min_driver=content.min_driver,
        deciding=R.CudaSource(deciding.source, deciding.path) if deciding else None,
        evidence=analysis.cuda_evidence,
        claims=tuple(R.CudaClaim(c.source, c.value) for c in content.claims),
        has_cuda_compat=analysis.has_cuda_compat,
    )


def _result(
    analysis: ImageAnalysis,
    content: ContentCuda,
    coverages: Sequence[R.TargetCoverage],
    dockerfile: DockerfileLines | None,
) -> R.ImageResult:
    image, dive = analysis.image, analysis.dive
    hidden = sorted(analysis.hidden, key=lambda h: (-h.size, h.path))
    return R.ImageResult(
        image=R.ImageIdentity(
            reference=image.reference,
            source=image.source,
            manifest_digest=image.manifest_digest,
            config_digest=image.config_digest,
            platform=image.platform,
            platforms=tuple(image.platforms),
        ),
        size=R.Sizes(
            compressed=analysis.compressed_size,
            uncompressed=analysis.content_size,
            visible=analysis.filesystem.visible_bytes,
            layers=len(analysis.layers),
        ),
        layers=_layers(analysis, dockerfile),
        dive=R.Dive(
            efficiency=dive.efficiency,
            wasted_bytes=dive.wasted_bytes,
            user_size_bytes=dive.user_size_bytes,
            user_wasted_percent=dive.user_wasted_percent,
            size_bytes=dive.size_bytes,
            inefficient_files=tuple(
                R.InefficientFile(i.path, i.count, i.cumulative_size)
                for i in dive.inefficiencies[:_LISTED]
            ),
        ),
        waste=R.Waste(
            corrected_wasted_bytes=analysis.filesystem.hidden_bytes,
            hidden_files=len(hidden),
            largest_hidden=tuple(
                R.HiddenFile("/" + h.path, h.size, h.added_in, h.hidden_in, h.how)
                for h in hidden[:_LISTED]
            ),
        ),
        weights=tuple(R.Weights("/" + w.path, w.format, w.size, w.layer) for w in analysis.weights),
        hub_caches=_groups(analysis.hub_caches),
        package_caches=_groups(analysis.package_caches),
        toolchains=_groups(analysis.toolchains),
        duplicate_cuda_libraries=tuple(
            R.DuplicateCuda(
                d.library,
                d.system_size,
                d.wheel_size,
                tuple("/" + p for p in d.system_paths),
                tuple("/" + p for p in d.wheel_paths),
            )
            for d in analysis.duplicate_cuda
        ),
        cuda=_cuda(analysis, content),
        gpu=_gpu(analysis, coverages),
        env=dict(sorted(image.config.env.items())),
        labels=dict(sorted(image.config.labels.items())),
        problems=tuple(
            R.Problem(layer, p.kind, p.path, p.message) for layer, p in analysis.problems
        ),
    )


def _tables(analysis: ImageAnalysis, result: R.ImageResult) -> list[Table]:
    layer_rows = tuple(
        (
            str(layer.index),
            human_size(layer.compressed_size),
            human_size(layer.content_size),
            ", ".join(f"{path} {human_size(size)}" for path, size in layer.top_dirs[:3]),
            layer.created_by[:80],
        )
        for layer in analysis.layers
    )
    tables = [
        Table(
            "Layers",
            ("#", "compressed", "uncompressed", "largest dirs", "created by"),
            layer_rows,
        )
    ]
    if analysis.gpu_libraries:
        tables.append(
            Table(
                "GPU code",
                ("library", "SASS", "PTX"),
                tuple(
                    ("/" + lib.path, " ".join(lib.sass) or "-", " ".join(lib.ptx) or "-")
                    for lib in analysis.gpu_libraries
                ),
            )
        )
    if analysis.weights:
        tables.append(
            Table(
                "Weights",
                ("path", "format", "size", "layer"),
                tuple(
                    ("/" + w.path, w.format, human_size(w.size), str(w.layer))
                    for w in analysis.weights[:_LISTED]
                ),
            )
        )
    dive = result.dive
    percent = dive.user_wasted_percent
    tables.append(
        Table(
            "Efficiency (dive figures)",
            ("efficiency", "wasted bytes (dive)", "user wasted", "corrected waste"),
            (
                (
                    f"{dive.efficiency:.4f}",
                    human_size(dive.wasted_bytes),
                    "n/a" if percent is None else f"{percent:.2%}",
                    human_size(result.waste.corrected_wasted_bytes),
                ),
            ),
        )
    )
    return tables


def judge(
    analysis: ImageAnalysis,
    config: ImageStageConfig,
    dockerfile: DockerfileLines | None = None,
) -> Judgement:
    """Findings, result and tables for one analysed image."""
    out = _Findings(dockerfile)
    for layer, problem in analysis.problems:
        if problem.kind == LIMIT_PROBLEM:
            out.add(rules.LAYER_UNCHECKED, f"{problem.message}; its content is unchecked", layer)
        else:
            out.add(
                rules.UNSAFE_ENTRY, f"layer {layer}: {problem.message}: '{problem.path}'", layer
            )
    labels = analysis.image.config.labels
    for label in config.required_labels:
        if not labels.get(label):
            out.add(rules.LABEL_MISSING, f"label {label} is missing")
    _weights_findings(out, analysis, config)
    _group_findings(out, rules.HUB_CACHE, analysis.hub_caches, "model hub cache")
    _group_findings(out, rules.PACKAGE_CACHE, analysis.package_caches, "package cache")
    _group_findings(out, rules.TOOLCHAIN, analysis.toolchains, "toolchain")
    content, coverages = _cuda_findings(out, analysis, config)
    _waste_findings(out, analysis, config)
    threshold = config.oversized_layer_mib * MIB
    for summary in analysis.layers:
        if summary.content_size > threshold:
            out.add(
                rules.LAYER_OVERSIZED,
                f"layer {summary.index} holds {human_size(summary.content_size)} "
                f"(limit {human_size(threshold)}): {summary.created_by[:120]}",
                summary.index,
            )
    if config.size_budget_mib is not None and analysis.content_size > config.size_budget_mib * MIB:
        out.add(
            rules.OVER_BUDGET,
            f"image holds {human_size(analysis.content_size)}, "
            f"budget {human_size(config.size_budget_mib * MIB)}",
        )
    result = _result(analysis, content, coverages, dockerfile)
    used = {finding.rule for finding in out.items}
    others = [p for p in analysis.image.platforms if p != analysis.image.platform]
    platform = analysis.image.platform + (
        f" (index also has {', '.join(others)})" if others else ""
    )
    headline = (
        f"{platform}: {human_size(analysis.content_size)} in {len(analysis.layers)} layers "
        f"({human_size(analysis.compressed_size)} compressed); dive efficiency "
        f"{analysis.dive.efficiency:.2%}; effective CUDA {content.effective or 'none'}"
    )
    return Judgement(
        findings=out.items,
        rules={rule_id: rules_by_id(rules.RULES)[rule_id] for rule_id in sorted(used)},
        result=result,
        tables=_tables(analysis, result),
        headline=headline,
    )


def inspect_report(command: str, judgement: Judgement) -> Report:
    """The Report of `gpuship inspect`: the judgement, and the step outputs of one image."""
    result = judgement.result
    return Report(
        command=command,
        findings=judgement.findings,
        result=result,
        rules=judgement.rules,
        tables=judgement.tables,
        outputs={
            "digest": result.image.manifest_digest,
            "effective-cuda": result.cuda.effective or "",
            "min-driver": result.cuda.min_driver or "",
            "size-bytes": str(result.size.uncompressed),
            "sass": ";".join(result.gpu.sass),
            "efficiency": f"{result.dive.efficiency:.4f}",
        },
        headline=judgement.headline,
    )
