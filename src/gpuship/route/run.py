"""`gpuship route` end to end: read the inventory and the images, route, build the report.

Takes plain values (settings, registry access, the time now) and the image stage's reader of an
image's needs, which the command passes in; the registry and that reader are the only outside
world it touches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuship.compat import rule_ids
from gpuship.compat.cell import CellSpec, cell_needs, image_cell_id, read_matrix
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.floor import DriverFloor
from gpuship.compat.hosts import RULES as HOST_RULES
from gpuship.compat.hosts import NamedHost, host_problems
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.verdict import judge
from gpuship.errors import InputError, UsageError
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.platforms import PlatformMissing
from gpuship.registry.access import RegistryAccess
from gpuship.report import Finding, Report, Severity
from gpuship.report.catalog import rules_by_id
from gpuship.route import rules
from gpuship.route.arc import scale_sets
from gpuship.route.config import RouteConfig
from gpuship.route.inventory import Inventory, read_inventory
from gpuship.route.kubernetes import node_selector_terms, pod_constraints
from gpuship.route.report import (
    NAME,
    headline,
    route_findings,
    route_outputs,
    route_result,
    route_tables,
)
from gpuship.route.result import ArcScaleSet, KubernetesDocument, KubernetesOnly
from gpuship.route.routing import ImageToRoute, Routing, fleet_hosts, os_arch, route_images

DEFAULT_PLATFORM = "linux/amd64"
# The step output listing the labels to take off runners that lag or lie (`compat.hosts`).
LABEL_REMOVALS = "label-removals"
# The platforms GPU nodes run (x86_64, and arm64 for Grace: GH200, GB200): Kubernetes
# constraints cover each of them the image has, since the cluster's nodes are not audited.
GPU_PLATFORMS = ("linux/amd64", "linux/arm64")
# An image's needs for one platform (reference, platform); `PlatformMissing` when an index has
# no entry for it. The command passes the image stage's reader, `--deep` included.
ReadNeeds = Callable[[str, str], ImageGpuNeeds]


@dataclass(frozen=True)
class RouteRequest:
    """What to route and where the fleet is."""

    images: Sequence[str] = ()
    matrix: Path | None = None
    fleet: str | None = None
    platforms: Sequence[str] = ()
    kubernetes: bool = False
    arc: bool = False  # Actions Runner Controller scale sets (implies `kubernetes`)
    tolerations: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    @property
    def node_constraints(self) -> bool:
        """Kubernetes node constraints are wanted: for `kubernetes`, and for `arc`, whose
        scale sets are built from them (the one place `arc` implies `kubernetes`)."""
        return self.kubernetes or self.arc


@dataclass(frozen=True)
class Settings:
    """The config sections route reads, and how it reaches registries."""

    verify: VerifyConfig
    route: RouteConfig
    access: RegistryAccess
    limits: Limits = DEFAULT_LIMITS


def run_route(
    request: RouteRequest, settings: Settings, now: datetime, read_needs: ReadNeeds
) -> Report:
    """Route every image over the fleet's pools (and as Kubernetes constraints)."""
    if not request.images and request.matrix is None:
        raise UsageError("route: give at least one IMAGE or --matrix FILE")
    inventory = _read_fleet(request.fleet, settings) if request.fleet else None
    return route_over(request, settings, now, read_needs, inventory)


def route_over(
    request: RouteRequest,
    settings: Settings,
    now: datetime,
    read_needs: ReadNeeds,
    inventory: Inventory | None,
) -> Report:
    """`run_route` once the fleet inventory (if any) is read: pure on its inputs."""
    hosts = (
        fleet_hosts([(e.audit, e.taken_at) for e in inventory.entries], now, settings.route.max_age)
        if inventory
        else ()
    )
    platforms = (
        list(request.platforms)
        or sorted(
            {h.platform for h in hosts}
            | (set(GPU_PLATFORMS) if request.node_constraints else set())
        )
        or [DEFAULT_PLATFORM]
    )
    images, references = images_to_route(request, settings, read_needs, platforms)
    kubernetes = (
        _kubernetes(images, settings, request.tolerations, inventory)
        if request.node_constraints
        else None
    )
    arc = None
    if request.arc and kubernetes is not None:
        arc = scale_sets(kubernetes, {n: references.get(n, n) != n for n in references})
    if inventory is None:
        report = _kubernetes_only_report(images, kubernetes, arc)
    else:
        if not inventory.entries:
            raise InputError(f"fleet inventory {inventory.repository} holds no readable audit")
        routing = route_images(hosts, images, settings.verify, settings.route)
        report = _report(
            routing,
            inventory,
            (settings.route, settings.verify.driver_floor),
            references,
            (kubernetes, arc),
        )
    if arc is not None:
        report.outputs["scale-sets"] = json.dumps(
            {image: found.name for found in arc for image in found.images}, separators=(",", ":")
        )
    return report


def _read_fleet(fleet: str, settings: Settings) -> Inventory:
    from gpuship.reference import parse_repository

    repo = parse_repository(fleet)
    with settings.access.client() as client:
        return read_inventory(client, repo)


def images_to_route(
    request: RouteRequest, settings: Settings, read_needs: ReadNeeds, platforms: Sequence[str]
) -> tuple[list[ImageToRoute], dict[str, str]]:
    """Images to route (by name) and what a GPU job pulls for each name."""
    images: list[ImageToRoute] = []
    references: dict[str, str] = {}
    if request.matrix is not None:
        cells = read_matrix(request.matrix, settings.limits)
        images, references = cell_images(cells, str(request.matrix))
    for reference in request.images:
        by_platform = _read_image(reference, platforms, read_needs)
        first = next(iter(by_platform.values()))
        name = image_cell_id(first.labels, reference) or reference
        images.append(ImageToRoute(name, by_platform))
        references[name] = reference
    return images, references


def cell_images(cells: Sequence[CellSpec], where: str) -> tuple[list[ImageToRoute], dict[str, str]]:
    """Matrix cells as images to route (by name), and the reference each is pushed as."""
    images = [_cell_image(cell) for cell in cells]
    references = {cell.name: cell_reference(cell, where) for cell in cells}
    return images, references


def _cell_image(cell: CellSpec) -> ImageToRoute:
    needs = cell_needs(cell)
    platforms = cell.platforms or [DEFAULT_PLATFORM]
    return ImageToRoute(needs.reference, {os_arch(p): needs for p in platforms})


def cell_reference(cell: CellSpec, where: str) -> str:
    """What a GPU job pulls for a cell: its first tag (a full reference, as `gpuship matrix`
    writes it; a bare tag joins the cell's repository) or its digest. Never the repository
    alone, which would pull whatever `latest` is then: that is an input error."""
    from gpuship.reference import is_digest, is_valid_tag, parse_reference

    name = cell.name
    if cell.tags:
        text = cell.tags[0]
        if is_valid_tag(text) and cell.repository:
            text = f"{cell.repository}:{text}"
    elif cell.digest and is_digest(cell.digest) and cell.repository:
        text = f"{cell.repository}@{cell.digest}"
    else:
        raise InputError(
            f"{where}: cell {name} has no tag or digest: a bare repository would pull whatever "
            "'latest' is; give the cell tags ('gpuship matrix' writes them) or route the "
            "built image by digest"
        )
    try:
        reference = parse_reference(text, default_tag=None)
    except InputError as error:
        raise InputError(f"{where}: cell {name}: {error}") from None
    if reference.tag is None and reference.digest is None:
        raise InputError(f"{where}: cell {name}: tag {text!r} names no tag or digest")
    return text


def pools_for_cells(
    cells: Sequence[CellSpec], fleet: str, settings: Settings, now: datetime
) -> dict[str, tuple[str, ...]]:
    """Cell name -> the pools that can run it (for the image map)."""
    inventory = _read_fleet(fleet, settings)
    hosts = fleet_hosts(
        [(e.audit, e.taken_at) for e in inventory.entries], now, settings.route.max_age
    )
    images = [_cell_image(cell) for cell in cells]
    routing = route_images(hosts, images, settings.verify, settings.route)
    return {route.image.name: route.runnable_pools for route in routing.routes}


def _read_image(
    reference: str, platforms: Sequence[str], read_needs: ReadNeeds
) -> dict[str, ImageGpuNeeds]:
    """The image's needs for each platform it has among `platforms` (at least one)."""
    found: dict[str, ImageGpuNeeds] = {}
    missing: list[str] = []
    for platform in platforms:
        try:
            needs = read_needs(reference, platform)
        except PlatformMissing as error:
            missing.append(str(error))
            continue
        # A single-platform image answers every platform with its own config.
        found.setdefault(os_arch(needs.platform or platform), needs)
    if not found:
        raise InputError("; ".join(missing))
    return found


def _kubernetes(
    images: Sequence[ImageToRoute],
    settings: Settings,
    tolerations: Sequence[Mapping[str, Any]],
    inventory: Inventory | None,
) -> tuple[KubernetesDocument, ...]:
    """Per image, the PodSpec fragment; hosts of the inventory that fail a check of the host
    itself, which GFD labels cannot show (the container runtime, the CDI spec), are excluded by
    hostname. ECC errors are a warning in verify, so they exclude no host."""
    documents: list[KubernetesDocument] = []
    config = settings.verify
    excluded = _host_state_failures(config, inventory)
    limit = settings.limits.regions_max_verdicts
    for image in images:
        terms = node_selector_terms(image.needs, config, excluded, limit)
        document: dict[str, Any] = {"image": image.name}
        if terms:
            document.update(pod_constraints(terms, [dict(t) for t in tolerations]))
        documents.append(document)
    return tuple(documents)


def _host_state_failures(config: VerifyConfig, inventory: Inventory | None) -> list[str]:
    if inventory is None:
        return []
    excluded = []
    for entry in inventory.entries:
        verdict = judge(entry.audit, None, config)
        if any(c.status is Status.FAIL and c.rule in _HOST_STATE_RULES for c in verdict.checks):
            excluded.append(entry.audit.runner.hostname)
    return excluded


def _report(
    routing: Routing,
    inventory: Inventory,
    configs: tuple[RouteConfig, DriverFloor],
    references: dict[str, str],
    documents: tuple[tuple[KubernetesDocument, ...] | None, tuple[ArcScaleSet, ...] | None],
) -> Report:
    config, floors = configs
    kubernetes, arc = documents
    findings = route_findings(routing, config)
    # Hosts with a fresh audit: a stale one is reported as stale, not judged on old readings.
    fresh = [NamedHost(host.name, host.audit) for host in routing.hosts if not host.stale]
    problems = host_problems(fresh, floors)
    findings += [problem.finding for problem in problems]
    if kubernetes is not None:
        unroutable = {route.image.name for route in routing.routes if route.chosen is None}
        findings += _no_node_findings(kubernetes, unroutable)
    findings += [
        Finding(
            rule=rules.UNREADABLE_ENTRY,
            severity=Severity.WARNING,
            message=f"inventory entry {tag} left out: {reason}",
            fix="publish the runner's audit again with this gpuship version",
        )
        for tag, reason in inventory.unreadable
    ]
    result = route_result(routing, config, inventory.repository, kubernetes, arc)
    outputs = route_outputs(routing, config, references)
    # One removal per runner and label, though a label may both lag and lie.
    removals: dict[tuple[str, str], str] = {}
    for problem in problems:
        for label in problem.labels:
            removals.setdefault((problem.runner, label), problem.finding.rule)
    outputs[LABEL_REMOVALS] = json.dumps(
        [{"runner": r, "label": label, "rule": rule} for (r, label), rule in removals.items()],
        separators=(",", ":"),
    )
    return Report(
        command=NAME,
        findings=findings,
        result=result,
        rules=rules_by_id((*rules.RULES, *HOST_RULES)),
        tables=route_tables(routing),
        outputs=outputs,
        failed=any(f.severity is Severity.ERROR for f in findings),
        headline=headline(routing),
        subject=inventory.repository,
    )


def _kubernetes_only_report(
    images: Sequence[ImageToRoute],
    kubernetes: tuple[KubernetesDocument, ...] | None,
    arc: tuple[ArcScaleSet, ...] | None,
) -> Report:
    """Without a fleet: the Kubernetes constraints only (no runner pools to route to)."""
    if kubernetes is None:
        raise UsageError(
            "route needs --fleet REGISTRY/REPO (or --format k8s or arc for Kubernetes)"
        )
    findings = _no_node_findings(kubernetes, reported=set())
    return Report(
        command=NAME,
        findings=findings,
        result=KubernetesOnly(kubernetes, tuple(image.name for image in images), arc),
        rules=rules_by_id(rules.RULES),
        failed=bool(findings),
        headline=f"Kubernetes node constraints for {len(images)} image(s)",
    )


def _no_node_findings(
    kubernetes: Sequence[KubernetesDocument], reported: set[str]
) -> list[Finding]:
    """An error for each image no Kubernetes node can run, with or without a fleet (an image
    `reported` already runs on no pool: one finding for it is enough)."""
    return [
        Finding(
            rule=rules.UNROUTABLE,
            severity=Severity.ERROR,
            message=f"{name}: verify passes on no node GPU Feature Discovery can label (no "
            "driver, CUDA version and compute capability together run it under verify:)",
            fix="check 'gpuship verify' with the image on a host that should run it: its "
            "arch list, CUDA release, min-driver label or NVIDIA_REQUIRE_* rule it out",
        )
        for name in (str(doc["image"]) for doc in kubernetes if "affinity" not in doc)
        if name not in reported
    ]


# Checks of the host itself, which GPU Feature Discovery labels do not show.
_HOST_STATE_RULES = frozenset({rule_ids.RUNTIME, rule_ids.CDI_SPEC})
