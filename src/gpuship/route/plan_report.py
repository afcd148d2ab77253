"""`gpuship fleet plan`'s report: the image x pool grid before and after, what the change
loses, and the rollout in order with the command that checks each step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.driver import native_driver
from gpuship.compat.hosts import LABEL_SCHEME
from gpuship.cuda.version import Version
from gpuship.errors import UsageError
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.route import rules
from gpuship.route.plan import (
    Change,
    Dropped,
    FleetPlan,
    dropped_generations,
    plan_change,
    retired_hosts,
)
from gpuship.route.plan_result import DroppedGeneration, FleetPlanResult, PlanCell, RolloutStep
from gpuship.route.routing import FleetHost, fleet_hosts
from gpuship.route.run import ReadNeeds, RouteRequest, Settings, images_to_route

NAME = "fleet"


@dataclass(frozen=True)
class Checks:
    """How the user gave the fleet and the images, for the commands that check each step."""

    fleet: str  # audit files (`gpuship fleet AUDITS`)
    images: str  # `--matrix FILE` or `--image REF ...`


def run_plan(
    request: RouteRequest,
    audits: Sequence[HostAudit],
    change: Change,
    settings: Settings,
    read_needs: ReadNeeds,
    checks: Checks,
) -> Report:
    """Plan `change` over the audited hosts and the images of `request`. Audit files are
    judged as fresh, as `gpuship fleet` judges them."""
    if not request.images and request.matrix is None:
        raise UsageError("fleet plan: give the images in use: --matrix FILE or --image REF")
    now = datetime.now().astimezone()
    hosts = fleet_hosts([(audit, now) for audit in audits], now, settings.route.max_age)
    platforms = list(request.platforms) or sorted({host.platform for host in hosts})
    images, _ = images_to_route(request, settings, read_needs, platforms)
    plan = plan_change(hosts, images, change, settings.verify, settings.route)
    return plan_report(plan, hosts, checks)


def plan_report(plan: FleetPlan, hosts: Sequence[FleetHost], checks: Checks) -> Report:
    """The plan as a report; failed when a released image loses every host or a driver branch
    drops GPUs of the fleet."""
    cells = tuple(
        PlanCell(image, pool, b.status, b.why, a.status, a.why)
        for image in plan.images
        for pool in plan.pools
        for b, a in [(plan.state(plan.before, image, pool), plan.state(plan.after, image, pool))]
    )
    dropped = dropped_generations(hosts, plan.change)
    lowest, unknown = plan.lowest_driver()
    result = FleetPlanResult(
        changes=plan.change.describe(),
        pools=plan.pools,
        images=plan.images,
        cells=cells,
        images_losing_every_host=plan.losing_every_host,
        lowest_driver_running_everything=str(lowest) if lowest else None,
        driver_unknown_for=unknown,
        dropped_generations=tuple(_dropped(d) for d in dropped),
        rollout=rollout(plan, hosts, checks),
    )
    findings = _findings(result)
    return Report(
        command=NAME,
        findings=findings,
        result=result,
        rules=rules_by_id(rules.RULES),
        tables=_tables(result),
        failed=any(f.severity is Severity.ERROR for f in findings),
        headline=f"{'; '.join(result.changes)}: "
        f"{sum(c.before != c.after for c in cells)} of {len(cells)} image x pool verdicts "
        f"change, {len(result.images_losing_every_host)} image(s) lose every host",
    )


def _dropped(found: Dropped) -> DroppedGeneration:
    return DroppedGeneration(
        found.pool, str(found.driver), found.generation, found.hosts, found.source
    )


def rollout(plan: FleetPlan, hosts: Sequence[FleetHost], checks: Checks) -> tuple[RolloutStep, ...]:
    """Pilot host, rest of the pool, next pool; new CUDA variants built before the driver steps
    when the fleet already runs them, after when they need the new drivers; retired hosts last,
    once their images run elsewhere."""
    steps: list[tuple[str, tuple[str, ...], str]] = []
    build = _build_step(plan, checks)
    if build and not _needs_new_drivers(plan, hosts):
        steps.append(build)
    for pool, driver in plan.change.drivers:
        members = sorted(h.name for h in hosts if pool in h.labels)
        pilot, rest = members[0], tuple(members[1:])
        rename = _rename(pool, driver.major)
        steps.append(
            (
                f"upgrade the pilot host of pool {pool} to driver {driver}{rename}",
                (pilot,),
                f"on {pilot}: gpuship audit --label {pool} --json-file pilot.json, then "
                f"gpuship fleet pilot.json {checks.images}: no image turns fail",
            )
        )
        if rest:
            steps.append(
                (
                    f"upgrade the other {len(rest)} host(s) of pool {pool} to driver {driver}",
                    rest,
                    f"gpuship audit on each, then gpuship fleet {checks.fleet} {checks.images} "
                    "(or gpuship route --fleet REPO): each image routes as this plan says",
                )
            )
    if build and _needs_new_drivers(plan, hosts):
        steps.append(build)
    for name in plan.change.retire:
        steps.append(
            (
                f"retire {name}: take its runners' labels off (GitHub REST, DELETE "
                "/repos/{owner}/{repo}/actions/runners/{runner_id}/labels/{name})",
                retired_hosts(hosts, name),
                f"gpuship route --fleet REPO {checks.images}: no image loses its pool",
            )
        )
    return tuple(
        RolloutStep(number, action, targets, check)
        for number, (action, targets, check) in enumerate(steps, 1)
    )


def _rename(pool: str, branch: int) -> str:
    match = LABEL_SCHEME.fullmatch(pool)
    if match is None or int(match.group(2)) == branch:
        return ""
    renamed = f"gpu-{match.group(1)}-{branch}" + (f"-{match.group(3)}" if match.group(3) else "")
    return f", and rename its label {pool} to {renamed}"


def _build_step(plan: FleetPlan, checks: Checks) -> tuple[str, tuple[str, ...], str] | None:
    if not plan.change.cuda:
        return None
    releases = ", ".join(sorted({str(cuda) for _, cuda in plan.change.cuda}))
    return (
        f"build the CUDA {releases} variants",
        (),
        f"gpuship matrix (checks verify.driver-floor), then gpuship route {checks.images}",
    )


def _needs_new_drivers(plan: FleetPlan, hosts: Sequence[FleetHost]) -> bool:
    """Some new variant needs a driver newer than every host's before the change."""
    newest = max((Version.parse(h.audit.nvml.driver_version) for h in hosts), default=None)
    before = set(plan.images_before)
    for route in plan.after.routes:
        if route.image.name in before:
            continue
        for needs in route.image.needs.values():
            needed = native_driver(needs)
            if needed is not None and (newest is None or needed > newest):
                return True
    return False


def _findings(result: FleetPlanResult) -> list[Finding]:
    findings = [
        Finding(
            rule=rules.PLAN_LOSES_IMAGE,
            severity=Severity.ERROR,
            message=f"{image} runs on no pool after the change ({'; '.join(result.changes)})",
            fix="keep a pool that runs it, or build a variant the changed fleet runs",
        )
        for image in result.images_losing_every_host
    ]
    findings += [
        Finding(
            rule=rules.PLAN_DROPS_GPUS,
            severity=Severity.ERROR,
            message=f"driver {d.driver} on pool {d.pool} no longer supports {d.generation} GPUs "
            f"of {', '.join(d.hosts)} (source: {d.source})",
            fix=f"keep those hosts on their driver branch and out of pool {d.pool}, or retire them",
        )
        for d in result.dropped_generations
    ]
    return findings


def _why(cell: PlanCell) -> str:
    """Why the image is where it is after the change, else why it was where it was before."""
    if cell.after_why:
        return cell.after_why
    return f"before: {cell.before_why}" if cell.before_why else ""


def _tables(result: FleetPlanResult) -> list[Table]:
    grid = Table(
        title="Images x pools, before and after",
        headers=("image", "pool", "before", "after", "why"),
        rows=tuple((c.image, c.pool, c.before, c.after, _why(c)) for c in result.cells),
    )
    steps = Table(
        title="Rollout",
        headers=("step", "action", "hosts", "check"),
        rows=tuple(
            (str(s.step), s.action, ", ".join(s.hosts) or "-", s.check) for s in result.rollout
        ),
    )
    facts = Table(
        title="Plan",
        headers=("", "value"),
        rows=(
            ("change", "; ".join(result.changes)),
            (
                "lowest driver that runs every image natively",
                result.lowest_driver_running_everything or "unknown",
            ),
            ("minimum driver unknown for", ", ".join(result.driver_unknown_for) or "none"),
            ("images that lose every host", ", ".join(result.images_losing_every_host) or "none"),
            (
                "GPU generations dropped",
                ", ".join(f"{d.generation} on {d.pool}" for d in result.dropped_generations)
                or "none",
            ),
        ),
    )
    return [facts, grid, steps]
