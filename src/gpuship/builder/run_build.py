"""Carry out one cell's build: choose the builder, build, push every tag, check, report.

The Report's outputs are the action's: `digest`, `image` (repo@digest), `tags` (one per
line), `imageid` (engine builds) and `metadata` (compact JSON). A failed build becomes a
finding on the Dockerfile line the builder stopped at; a refused push a finding naming what
was and was not pushed. Either way `failed` is set and no digest output is written.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuship import labels as L
from gpuship.builder import result as R
from gpuship.builder import rules
from gpuship.builder.build_log import BuildFailure
from gpuship.builder.cell_spec import CellSpec
from gpuship.builder.engine import BuildFailed, BuildRequest, Progress
from gpuship.builder.registry_auth import registry_of
from gpuship.builder.secrets import secret_ids
from gpuship.errors import ConfigError, InputError
from gpuship.image_result import ImageResult
from gpuship.report import Finding, Location, Report, Rule, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.report.result import to_json

# The image stage's checks on a pushed image (REPO@DIGEST, Dockerfile): findings, their rules,
# and the image result; given by the command, so this stage needs no other stage's insides.
ImageCheckResult = tuple[list[Finding], Mapping[str, Rule], ImageResult]
ImageCheck = Callable[[str, Path], ImageCheckResult]

SHORT_SHA = 7  # docker/metadata-action's default short SHA length
BASE_IMAGE_ARG = "BASE_IMAGE"
_OUTPUT_IN_MESSAGE = 10


@dataclass(frozen=True)
class BuildPlan:
    """What `gpuship build` was asked to do for one cell."""

    cell: CellSpec
    directory: Path
    commit: str | None
    created: str
    push: bool
    builder: str  # auto | buildx | engine
    network: str | None
    image_checks: bool
    # BuildKit only: `--secret` specs, secret values by id, `--ssh` specs, attestations
    secrets: tuple[str, ...] = ()
    secret_values: Mapping[str, str] = field(default_factory=dict)
    ssh: tuple[str, ...] = ()
    provenance: str | None = None
    sbom: str | None = None

    @property
    def needs_buildkit(self) -> list[str]:
        """The options only BuildKit can honour that this plan asks for."""
        asked = {
            "secrets": bool(self.secrets or self.secret_values),
            "ssh": bool(self.ssh),
            "provenance": self.provenance is not None,
            "sbom": self.sbom is not None,
        }
        return [name for name, wanted in asked.items() if wanted]

    def registries(self) -> list[str]:
        """The registries a build talks to: push, cache, base image (each gets its own
        credential, nothing else: `builder/registry_auth.py`)."""
        references = [self.cell.repository, self.cell.build_args.get(BASE_IMAGE_ARG)]
        cache = self.cell.cache_from or ""
        if cache.startswith("type=registry,"):
            references.append(dict(_option(part) for part in cache.split(",")).get("ref"))
        return list(dict.fromkeys(registry_of(r) for r in references if r))

    @property
    def candidate_tag(self) -> str | None:
        """`<repo>:sha-<commit7>-<cell>`, the tag the release stage promotes."""
        if not self.commit:
            return None
        return f"{self.cell.repository}:sha-{self.commit[:SHORT_SHA]}-{self.cell.id}"

    def tags(self) -> tuple[str, ...]:
        """Candidate tag first, then the cell's tags; a local name when there is neither."""
        tags = [t for t in (self.candidate_tag, *self.cell.tags) if t]
        if not tags:
            tags = [f"{self.cell.repository}:{self.cell.id}"]
        return tuple(dict.fromkeys(tags))

    def labels(self) -> dict[str, str]:
        """The cell's labels plus the build time and commit."""
        labels = dict(self.cell.labels)
        labels[L.OCI_CREATED] = self.created
        if self.commit:
            labels[L.OCI_REVISION] = self.commit
        return labels

    def request(self) -> BuildRequest:
        """The builder request; InputError when the Dockerfile or context is missing."""
        context = (self.directory / self.cell.context).resolve()
        dockerfile = (self.directory / self.cell.dockerfile).resolve()
        if not context.is_dir():
            raise InputError(f"build context {self.cell.context} is not a directory")
        if not dockerfile.is_file():
            raise InputError(f"Dockerfile {self.cell.dockerfile} does not exist")
        return BuildRequest(
            context=context,
            dockerfile=dockerfile,
            tags=self.tags(),
            build_args=dict(self.cell.build_args),
            labels=self.labels(),
            target=self.cell.target,
            platform=self.cell.platforms[0] if len(self.cell.platforms) == 1 else None,
            network=self.network,
        )


def execute(
    plan: BuildPlan,
    environ: Mapping[str, str],
    progress: Progress,
    check_image: ImageCheck | None = None,
) -> Report:
    """Build and push with the chosen builder and return the Report; `check_image` runs on
    the pushed image when the plan asks for image checks."""
    from gpuship.builder.buildx import buildx_available

    request = plan.request()
    use_buildx = plan.builder == "buildx" or (plan.builder == "auto" and buildx_available(environ))
    if not use_buildx and len(plan.cell.platforms) > 1:
        raise ConfigError(
            f"cell {plan.cell.id}: {len(plan.cell.platforms)} platforms need docker buildx, "
            "which is not installed; the engine's builder builds one platform"
        )
    if not use_buildx and plan.needs_buildkit:
        raise ConfigError(
            f"{', '.join(plan.needs_buildkit)} need BuildKit (docker buildx), which is not in "
            "use; the engine's classic builder cannot mount secrets or attach attestations"
        )
    report = Report(command="build", rules=rules_by_id(rules.RULES))
    builder = "buildx" if use_buildx else "engine"
    # The ids of the secrets the build gets (never their values); checked before building.
    secrets = secret_ids(plan.secrets, plan.secret_values)
    head = _Head(plan.cell.id, builder, tuple(secrets) or None)
    try:
        if use_buildx:
            outcome = _build_buildx(plan, request, environ, progress)
        else:
            outcome = _build_engine(plan, request, environ, progress)
    except BuildFailed as exc:
        _report_failure(report, head, exc.failure, request.dockerfile)
        return report
    if outcome.refused is not None:
        _report_refusal(report, head, outcome)
        return report
    checked: ImageCheckResult | None = None
    if plan.push and plan.image_checks and outcome.digest and check_image is not None:
        checked = check_image(f"{plan.cell.repository}@{outcome.digest}", request.dockerfile)
    _report_success(report, plan, head, outcome, checked)
    return report


@dataclass(frozen=True)
class _Outcome:
    digest: str | None
    image_id: str | None
    pushed: tuple[str, ...]
    refused: tuple[str, str] | None
    not_pushed: tuple[str, ...]
    cached_steps: tuple[str, ...]
    steps: tuple[str, ...]


def _build_engine(
    plan: BuildPlan, request: BuildRequest, environ: Mapping[str, str], progress: Progress
) -> _Outcome:
    from gpuship.builder.engine import build_image, connect_engine, push_tags

    # The engine's builder reuses its own local layer cache. Its `cache_from` is not used:
    # given one, the classic builder looks only at that image's history, which holds no
    # layers of earlier stages, so multi-stage dependency layers would be rebuilt.
    with connect_engine(environ) as engine:
        built = build_image(engine, request, progress)
        digest: str | None = None
        result_tags: tuple[str, ...] = ()
        refused = None
        not_pushed: tuple[str, ...] = ()
        if plan.push:
            result = push_tags(engine, request.tags, progress, environ)
            result_tags = tuple(result.pushed)
            refused = result.refused
            not_pushed = tuple(t for t in request.tags if t not in result.pushed)
            digests = set(result.pushed.values())
            if refused is None and len(digests) != 1:
                refused = (request.tags[-1], f"tags got different digests: {sorted(digests)}")
            digest = next(iter(digests)) if refused is None else None
        return _Outcome(
            digest=digest,
            image_id=built.image_id,
            pushed=result_tags,
            refused=refused,
            not_pushed=not_pushed,
            cached_steps=built.cached_steps,
            steps=built.steps,
        )


def _build_buildx(
    plan: BuildPlan, request: BuildRequest, environ: Mapping[str, str], progress: Progress
) -> _Outcome:
    from gpuship.builder.buildx import BuildxOptions, PushRefusedByBuildx, build_with_buildx
    from gpuship.builder.registry_auth import scoped_docker_config

    options = BuildxOptions(
        platforms=plan.cell.platforms,
        cache_from=plan.cell.cache_from,
        cache_to=plan.cell.cache_to,
        secrets=plan.secrets,
        secret_values=plan.secret_values,
        ssh=plan.ssh,
        provenance=plan.provenance,
        sbom=plan.sbom,
    )
    try:
        with scoped_docker_config(plan.registries(), environ) as scoped:
            metadata = build_with_buildx(request, options, plan.push, scoped, progress)
    except PushRefusedByBuildx as exc:
        return _Outcome(None, None, (), (request.tags[0], str(exc)), request.tags, (), ())
    digest = metadata.get("containerimage.digest")
    return _Outcome(
        digest=str(digest) if digest and plan.push else None,
        image_id=metadata.get("containerimage.config.digest"),
        pushed=request.tags if plan.push else (),
        refused=None,
        not_pushed=(),
        cached_steps=(),
        steps=(),
    )


def _option(part: str) -> tuple[str, str]:
    key, _, value = part.partition("=")
    return key, value


def _relative(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class _Head:
    """What every build result starts with."""

    cell: str
    builder: str
    secrets: tuple[str, ...] | None


def _report_failure(report: Report, head: _Head, failure: BuildFailure, dockerfile: Path) -> None:
    step = f" (step: {failure.step})" if failure.step else ""
    # The builder's own last lines (e.g. pip's error) go with the annotation.
    output = "".join(f"\n{line}" for line in failure.output[-_OUTPUT_IN_MESSAGE:])
    report.add(
        Finding(
            rule=rules.BUILD_FAILED.id,
            severity=Severity.ERROR,
            message=f"{failure.message}{step}{output}",
            location=Location(file=_relative(dockerfile), line=failure.line),
        )
    )
    report.failed = True
    report.result = R.BuildFailed(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        error=failure.message,
        output_tail=tuple(failure.output),
    )
    report.headline = "build failed"


def _report_refusal(report: Report, head: _Head, outcome: _Outcome) -> None:
    assert outcome.refused is not None
    tag, message = outcome.refused
    pushed = ", ".join(outcome.pushed) or "none"
    missing = ", ".join(outcome.not_pushed) or tag
    report.add(
        Finding(
            rule=rules.PUSH_REFUSED.id,
            severity=Severity.ERROR,
            message=f"registry refused {tag}: {message}; pushed: {pushed}; not pushed: {missing}",
        )
    )
    report.failed = True
    report.result = R.PushRefused(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        pushed=outcome.pushed,
        not_pushed=outcome.not_pushed,
    )
    report.headline = "push refused; the tag set is incomplete"


def _report_success(
    report: Report,
    plan: BuildPlan,
    head: _Head,
    outcome: _Outcome,
    checked: ImageCheckResult | None,
) -> None:
    tags = plan.tags()
    image = f"{plan.cell.repository}@{outcome.digest}" if outcome.digest else None
    built = R.Built(
        cell=head.cell,
        builder=head.builder,
        secrets=head.secrets,
        digest=outcome.digest,
        image=image,
        image_id=outcome.image_id,
        tags=tags,
        pushed=plan.push,
        labels=plan.labels(),
        build_args=dict(plan.cell.build_args),
        steps=len(outcome.steps),
        cached_steps=len(outcome.cached_steps),
    )
    # The action's `metadata` output: the result without the image checks and secret ids.
    metadata = {k: v for k, v in to_json(built).items() if k != "secrets"}
    if checked is not None:
        # Merge the image stage's checks of the pushed image into the build report.
        findings, catalog, image_result = checked
        report.findings.extend(findings)
        report.rules = {**report.rules, **catalog}
        built = dataclasses.replace(built, image_checks=image_result)
    report.result = built
    report.outputs.update(
        {
            "digest": outcome.digest or "",
            "image": image or "",
            "imageid": outcome.image_id or "",
            "tags": "\n".join(tags),
            "metadata": json.dumps(metadata, separators=(",", ":"), sort_keys=True),
        }
    )
    report.tables.append(
        Table(
            title=f"Build {plan.cell.id}",
            headers=("tag", "digest"),
            rows=tuple((tag, outcome.digest or "(not pushed)") for tag in tags),
        )
    )
    cached = (
        f", {len(outcome.cached_steps)}/{len(outcome.steps)} steps cached" if outcome.steps else ""
    )
    report.headline = f"built {image or outcome.image_id}{cached}"
