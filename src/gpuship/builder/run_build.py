"""Carry out one cell's build: choose the builder, build, push every tag, check the pushed
image; `builder/report.py` turns what happened into the Report."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from gpuship.builder.engine import BuildFailed, Progress
from gpuship.builder.plan import BuildPlan
from gpuship.builder.report import (
    BuildOutcome,
    Head,
    ImageCheckResult,
    failure_report,
    refusal_report,
    success_report,
)
from gpuship.builder.secrets import secret_ids
from gpuship.docker.build import BuildRequest
from gpuship.errors import ConfigError
from gpuship.report import Report

# The image stage's checks on a pushed image (REPO@DIGEST, Dockerfile), given by the command,
# so this stage needs no other stage's insides.
ImageCheck = Callable[[str, Path], ImageCheckResult]


def execute(
    plan: BuildPlan,
    environ: Mapping[str, str],
    progress: Progress,
    check_image: ImageCheck | None = None,
) -> Report:
    """Build and push with the chosen builder and return the Report; `check_image` runs on
    the pushed image when the plan asks for image checks."""
    from gpuship.docker.buildx import buildx_available

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
    builder = "buildx" if use_buildx else "engine"
    # The ids of the secrets the build gets (never their values); checked before building.
    secrets = secret_ids(plan.secrets, plan.secret_values)
    head = Head(plan.cell.id, builder, tuple(secrets) or None)
    try:
        if use_buildx:
            outcome = _build_buildx(plan, request, environ, progress)
        else:
            outcome = _build_engine(plan, request, environ, progress)
    except BuildFailed as exc:
        return failure_report(head, exc.failure, request.dockerfile)
    if outcome.refused is not None:
        return refusal_report(head, outcome)
    checked: ImageCheckResult | None = None
    if plan.push and plan.image_checks and outcome.digest and check_image is not None:
        checked = check_image(f"{plan.cell.repository}@{outcome.digest}", request.dockerfile)
    return success_report(plan, head, outcome, checked)


def _build_engine(
    plan: BuildPlan, request: BuildRequest, environ: Mapping[str, str], progress: Progress
) -> BuildOutcome:
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
        return BuildOutcome(
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
) -> BuildOutcome:
    from gpuship.builder.build_log import buildkit_failure, push_refused
    from gpuship.builder.registry_auth import scoped_docker_config
    from gpuship.docker.buildx import BuildxFailed, BuildxOptions, build_with_buildx

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
    except BuildxFailed as exc:
        failure = buildkit_failure(exc.output, request.dockerfile.name)
        if not push_refused(failure):
            raise BuildFailed(failure) from None
        refused = (request.tags[0], failure.message)
        return BuildOutcome(None, None, (), refused, request.tags, (), ())
    digest = metadata.get("containerimage.digest")
    return BuildOutcome(
        digest=str(digest) if digest and plan.push else None,
        image_id=metadata.get("containerimage.config.digest"),
        pushed=request.tags if plan.push else (),
        refused=None,
        not_pushed=(),
        cached_steps=(),
        steps=(),
    )
