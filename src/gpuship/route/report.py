"""Turn a routing into the shared Report: findings with reasons, tables, outputs for `runs-on`."""

from __future__ import annotations

import json

from gpuship.config.duration import format_duration
from gpuship.report import Finding, Severity, Table
from gpuship.route import result as R
from gpuship.route import rules
from gpuship.route.config import RouteConfig
from gpuship.route.routing import RoutedImage, Routing

NAME = "route"


def route_findings(routing: Routing, config: RouteConfig) -> list[Finding]:
    """Unroutable images, split pools, stale hosts and missing pools, each with its fix."""
    stale_severity = Severity.ERROR if config.stale_audits == "fail" else Severity.WARNING
    findings = [
        Finding(
            rule=rules.STALE_AUDIT,
            severity=stale_severity,
            message=f"runner {host.name} ({', '.join(host.labels) or 'no labels'}): audit is "
            f"{format_duration(host.age)} old (route.max-audit-age {config.max_audit_age})"
            + ("; left out of its pools" if config.stale_audits == "unknown" else ""),
            fix="publish a fresh audit from the runner (gpuship audit --publish)",
        )
        for host in routing.stale_hosts
    ]
    findings += [
        Finding(
            rule=rules.MISSING_POOL,
            severity=stale_severity,
            message=f"pool {pool} (route.pools) has no audited runner",
            fix=f"publish an audit from a runner labelled {pool}, or remove it from route.pools",
        )
        for pool in routing.missing_pools
    ]
    unlabelled = [host.name for host in routing.hosts if not host.labels]
    if unlabelled:
        findings.append(
            Finding(
                rule=rules.UNLABELLED_RUNNER,
                severity=Severity.WARNING,
                message=f"{len(unlabelled)} runner(s) published an audit without labels and are "
                f"in no pool: {_some(unlabelled)}",
                fix="publish with --label <pool label> (GPUSHIP_RUNNER_LABELS for the runner "
                "hook and timer)",
            )
        )
    findings += _split_findings(routing)
    findings += [_unroutable(route) for route in routing.routes if route.chosen is None]
    return findings


def _split_findings(routing: Routing) -> list[Finding]:
    """One warning per split pool, however many images and hosts it is split for: a label
    every runner shares (`self-hosted`, `linux`) would otherwise give one per host and image."""
    findings = []
    for position, pool in enumerate(routing.pools):
        verdicts = [route.pools[position] for route in routing.routes]
        split = [(route.image.name, v) for route, v in zip(routing.routes, verdicts, strict=True)]
        split = [(name, v) for name, v in split if v.split]
        if not split:
            continue
        failing = sorted({f.host.name for _, v in split for f in v.failing})
        name, first = split[0]
        example = first.failing[0]
        images = _some([n for n, _ in split])
        findings.append(
            Finding(
                rule=rules.SPLIT_POOL,
                severity=Severity.WARNING,
                message=f"pool {pool} is split for {len(split)} image(s) ({images}): "
                f"{len(failing)} of its {len(first.verdicts)} host(s) cannot run them "
                f"({_some(failing)}), e.g. {example.host.name} cannot run {name}: "
                f"{example.reason}",
                fix=f"update those hosts (the fix verify gives on them) or take them out of pool "
                f"{pool} for these jobs; a label every runner shares is no pool: list the pools "
                "in route.pools",
            )
        )
    return findings


def _some(names: list[str], shown: int = 3) -> str:
    """The first few names, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _unroutable(route: RoutedImage) -> Finding:
    reasons = "; ".join(f"{p.pool}: {p.reason()}" for p in route.pools) or "no pools"
    return Finding(
        rule=rules.UNROUTABLE,
        severity=Severity.ERROR,
        message=f"{route.image.name} runs on no pool: {reasons}",
        fix="update the driver of a pool, add its GPU architecture to the image, or "
        "build a variant for an older CUDA",
    )


def route_tables(routing: Routing) -> list[Table]:
    """Images x pools (ok, split, the reason), then the hosts with their age."""
    grid = Table(
        title="Images x pools",
        headers=("image", *routing.pools),
        rows=tuple(
            (route.image.name, *(_cell(route, pool) for pool in routing.pools))
            for route in routing.routes
        ),
    )
    hosts = Table(
        title="Runners",
        headers=("runner", "labels", "platform", "driver", "GPUs", "audit age"),
        rows=tuple(
            (
                host.name,
                ", ".join(host.labels),
                host.platform,
                host.audit.nvml.driver_version,
                ", ".join(sorted({g.name for g in host.audit.nvml.gpus})),
                format_duration(host.age) + (" (stale)" if host.stale else ""),
            )
            for host in routing.hosts
        ),
    )
    return [grid, hosts]


def _cell(route: RoutedImage, pool: str) -> str:
    verdict = next(p for p in route.pools if p.pool == pool)
    if verdict.runs:
        return "ok (chosen)" if route.chosen == pool else "ok"
    mark = "SPLIT" if verdict.split else "no"
    return f"{mark}: {verdict.reason()}"


def route_result(
    routing: Routing,
    config: RouteConfig,
    fleet: str,
    kubernetes: tuple[R.KubernetesDocument, ...] | None = None,
    arc: tuple[R.ArcScaleSet, ...] | None = None,
) -> R.RouteResult:
    """The result: per image its pools and runs-on; the inventory's problems."""
    return R.RouteResult(
        pools=routing.pools,
        images=tuple(
            R.ImageRoute(
                name=route.image.name,
                pool=route.chosen,
                runs_on=(*config.runs_on, route.chosen) if route.chosen else None,
                runnable_pools=route.runnable_pools,
                pools={
                    pool.pool: R.PoolResult(
                        runs=pool.runs,
                        split=pool.split,
                        reason=pool.reason(),
                        hosts={
                            v.host.name: v.reason if not v.runs else "ok" for v in pool.verdicts
                        },
                        unknown_hosts=tuple(h.name for h in pool.unknown),
                    )
                    for pool in route.pools
                },
            )
            for route in routing.routes
        ),
        stale_hosts=tuple(h.name for h in routing.stale_hosts),
        missing_pools=routing.missing_pools,
        unroutable=tuple(r.image.name for r in routing.unroutable),
        fleet=fleet,
        kubernetes=kubernetes,
        arc=arc,
    )


def route_outputs(
    routing: Routing, config: RouteConfig, references: dict[str, str]
) -> dict[str, str]:
    """Step outputs: a matrix of the routable images for `strategy.matrix`, and maps by name."""
    include = [
        {
            "name": route.image.name,
            "image": references.get(route.image.name, route.image.name),
            "pool": route.chosen,
            "runs-on": [*config.runs_on, route.chosen],
        }
        for route in routing.routes
        if route.chosen is not None
    ]
    compact = {"separators": (",", ":")}
    return {
        "matrix": json.dumps({"include": include}, **compact),  # type: ignore[arg-type]
        "runs-on": json.dumps({e["name"]: e["runs-on"] for e in include}, **compact),  # type: ignore[arg-type]
        "pools": json.dumps(
            {r.image.name: list(r.runnable_pools) for r in routing.routes},
            **compact,  # type: ignore[arg-type]
        ),
        "unroutable": json.dumps([r.image.name for r in routing.unroutable]),
    }


def headline(routing: Routing) -> str:
    routed = len(routing.routes) - len(routing.unroutable)
    return (
        f"{routed} of {len(routing.routes)} image(s) routed over {len(routing.pools)} pool(s) "
        f"of {len(routing.hosts)} runner(s)"
        + (f"; {len(routing.unroutable)} run nowhere" if routing.unroutable else "")
    )
