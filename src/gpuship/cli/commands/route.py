"""`gpuship route`: which runner labels (or Kubernetes nodes) can run each image."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.context import Context
from gpuship.report import Report

if TYPE_CHECKING:
    from gpuship.compat.needs import ImageGpuNeeds
    from gpuship.registry.access import RegistryAccess
    from gpuship.route.labels import Remover
    from gpuship.route.run import ReadNeeds

NAME = "route"
HELP = (
    "pick the runner labels (or Kubernetes node constraints) that can run each image, from the "
    "fleet inventory, before any GPU job is queued"
)
FORMATS = ("k8s", "arc")
# Flags that set a gpuship.yaml key (flags > environment > file: `config/options.py`).
CONFIG_FLAGS = {"gpus": "verify.gpus", "min_memory_gib": "verify.min-memory-gib"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship route`."""
    parser.add_argument("images", nargs="*", metavar="IMAGE", help="image references to route")
    parser.add_argument("--matrix", metavar="FILE", help="'gpuship matrix' JSON: route each cell")
    parser.add_argument(
        "--fleet",
        metavar="REGISTRY/REPO",
        help="the fleet inventory ('gpuship audit --publish' target); read access is enough",
    )
    parser.add_argument(
        "--platform",
        action="append",
        default=[],
        help="platforms to read images for (default: those of the fleet's hosts)",
    )
    parser.add_argument("--deep", action="store_true", help="scan images whose labels are absent")
    parser.add_argument("--gpus", type=int, help="GPUs the job needs (overrides verify.gpus)")
    parser.add_argument(
        "--min-memory-gib", type=float, help="GPU memory the job needs (verify.min-memory-gib)"
    )
    parser.add_argument(
        "--toleration",
        action="append",
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="add a toleration to the Kubernetes and ARC output (e.g. nvidia.com/gpu:NoSchedule)",
    )
    parser.add_argument(
        "--remove-labels",
        choices=("dry-run", "apply"),
        help="take the labels of runners that lag their driver floor or whose labels lie off "
        "them through GitHub's REST API (apply: with the token in GPUSHIP_RUNNER_TOKEN, for "
        "the runners of GITHUB_REPOSITORY or --runner-scope); dry-run says what it would take",
    )
    parser.add_argument(
        "--runner-scope",
        metavar="OWNER/REPO|org:ORG",
        help="where the runners are registered (default: GITHUB_REPOSITORY)",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Route with the config's verify: and route: sections; exit 1 when an image runs nowhere."""
    from datetime import datetime, timezone

    from gpuship.compat.config import VerifyConfig
    from gpuship.errors import UsageError
    from gpuship.route.config import RouteConfig
    from gpuship.route.kubernetes import parse_toleration
    from gpuship.route.run import RouteRequest, Settings, run_route

    if not args.fleet and args.format not in FORMATS:
        raise UsageError(
            "route needs --fleet REGISTRY/REPO (or --format k8s or arc for Kubernetes)"
        )
    request = RouteRequest(
        images=args.images,
        matrix=Path(args.matrix) if args.matrix else None,
        fleet=args.fleet,
        platforms=args.platform,
        kubernetes=args.format == "k8s",
        arc=args.format == "arc",
        tolerations=[parse_toleration(t) for t in args.toleration],
    )
    access = ctx.registry_access()
    settings = Settings(
        verify=ctx.config.section(VerifyConfig),
        route=ctx.config.section(RouteConfig),
        access=access,
        limits=ctx.limits,
    )
    read_needs = _needs_reader(access, deep=args.deep)
    # Checked before the inventory is read: a missing token is a usage error, not a late one.
    remover = _remover(args, ctx) if args.remove_labels == "apply" else None
    report = run_route(request, settings, datetime.now(timezone.utc), read_needs)
    if args.remove_labels:
        from gpuship.route.labels import remove_labels
        from gpuship.route.run import LABEL_REMOVALS

        report.findings.extend(remove_labels(report.outputs.get(LABEL_REMOVALS, ""), remover))
    return report


def _remover(args: argparse.Namespace, ctx: Context) -> Remover:
    """GitHub's API, with the runner token, for the runners of the repository or organization."""
    from gpuship.errors import UsageError
    from gpuship.http.github import RunnerScope, remove_runner_label

    token = ctx.environ.get("GPUSHIP_RUNNER_TOKEN", "")
    where = args.runner_scope or ctx.environ.get("GITHUB_REPOSITORY", "")
    if not token or not where:
        raise UsageError(
            "--remove-labels apply needs GPUSHIP_RUNNER_TOKEN and GITHUB_REPOSITORY "
            "(or --runner-scope)"
        )
    scope = RunnerScope.of(ctx.environ.get("GITHUB_API_URL", "https://api.github.com"), where)
    return lambda runner, label: remove_runner_label(scope, token, runner, label)


def _needs_reader(access: RegistryAccess, *, deep: bool) -> ReadNeeds:
    """The image stage's reader of an image's needs, for route to call per platform (imported
    when an image is read: routing a matrix reads none)."""

    def read(reference: str, platform: str) -> ImageGpuNeeds:
        from gpuship.image.needs import read_gpu_needs

        return read_gpu_needs(reference, platform=platform, access=access, deep=deep)

    return read


def result_type() -> object:
    """The routes over the fleet inventory, or (without one) Kubernetes constraints only."""
    from gpuship.route.result import KubernetesOnly, RouteResult

    return RouteResult | KubernetesOnly
