"""Hosts that lag their pool's driver floor, and runner labels their own audit contradicts.

One finding per host (never per image x host): a host below its floor is a fact about the
host, whatever images it is asked to run. Labels follow the scheme of
docs/operations/accelerators.md, `gpu-<model>-<driver branch>[-<count>]`; a label the audit
contradicts (another GPU model, another driver branch, another GPU count) is an error. Each
finding carries the GitHub REST call that takes the label off the runner (docs.github.com,
REST API "Self-hosted runners": "Remove a custom label from a self-hosted runner for a
repository" / "... for an organization"), so the pool stops receiving jobs it cannot run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.compat import rule_ids
from gpuship.compat.audit import HostAudit
from gpuship.compat.floor import DriverFloor, host_floor
from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version
from gpuship.report import Finding, Rule, Severity

# docs/operations/accelerators.md, "Label scheme" (after RAPIDS): gpu-a100-550, gpu-h100-580-8.
LABEL_SCHEME = re.compile(r"gpu-([a-z0-9]+)-([0-9]{3,4})(?:-([0-9]{1,4}))?")
# Labels GitHub gives every self-hosted runner (docs.github.com, "Using labels with
# self-hosted runners"): they cannot be removed, and no pool is named by them.
DEFAULT_LABELS = frozenset({"self-hosted", "linux", "windows", "macos", "x64", "arm", "arm64"})
REST_DOCS = (
    "https://docs.github.com/en/rest/actions/self-hosted-runners"
    "#remove-a-custom-label-from-a-self-hosted-runner-for-a-repository"
)

RULES: tuple[Rule, ...] = (
    Rule(
        id=rule_ids.HOST_LAGS,
        name="verify-host-lags-floor",
        category="runtime",
        severity=Severity.WARNING,
        summary="Every host keeps its pool's driver floor (`verify.driver-floor`)",
        rationale="A host below the floor its pool agrees on keeps receiving jobs built for "
        "the floor's CUDA release; they fail there (PTX JIT, newer driver APIs), or run "
        "only through minor-version compatibility.",
        fix="Upgrade the host's driver, or take the pool's label off the runner (the REST call "
        "in the finding).",
    ),
    Rule(
        id=rule_ids.LABEL_LIES,
        name="verify-label-contradicted",
        category="runtime",
        severity=Severity.ERROR,
        summary="A runner label `gpu-<model>-<branch>[-<count>]` matches the host's audit",
        rationale="Jobs pick runners by label; a label that names a GPU, a driver branch or a "
        "GPU count the host does not have sends them where they fail.",
        fix="Rename the label after the host's audit, or take it off the runner (the REST call "
        "in the finding).",
    ),
)


@dataclass(frozen=True)
class NamedHost:
    """An audit and the name fleet or route shows it by."""

    name: str
    audit: HostAudit


def label_removal(host: NamedHost, label: str) -> str:
    """The REST call that takes `label` off the host's runner, and how to find its id."""
    runner = _runner(host)
    return (
        f"DELETE /repos/{{owner}}/{{repo}}/actions/runners/{{runner_id}}/labels/{label} "
        f"(organization runners: DELETE /orgs/{{org}}/actions/runners/{{runner_id}}/labels/"
        f"{label}); runner_id: GET /repos/{{owner}}/{{repo}}/actions/runners?name={runner} "
        f"({REST_DOCS})"
    )


@dataclass(frozen=True)
class HostProblem:
    """A finding about a host, and the labels that take it out of the pools it fails."""

    finding: Finding
    runner: str  # the runner's registered name (RUNNER_NAME), else its hostname
    labels: tuple[str, ...]


def host_findings(hosts: Sequence[NamedHost], floors: DriverFloor) -> list[Finding]:
    """For each host: one finding when it lags its floor, one per label its audit contradicts."""
    return [problem.finding for problem in host_problems(hosts, floors)]


def host_problems(hosts: Sequence[NamedHost], floors: DriverFloor) -> list[HostProblem]:
    """`host_findings` with the labels each one's removal call takes off."""
    problems: list[HostProblem] = []
    for host in hosts:
        lag = lag_problem(host, floors)
        if lag is not None:
            problems.append(lag)
        problems.extend(label_problems(host))
    return problems


def _runner(host: NamedHost) -> str:
    return host.audit.runner.runner_name or host.audit.runner.hostname


def lag_problem(host: NamedHost, floors: DriverFloor) -> HostProblem | None:
    """The host's driver below its floor (none: at or above it, or no floor applies); a driver
    the audit gives in no version form is a note: whether it lags is unknown."""
    labels = host.audit.runner.labels
    floor = host_floor(floors, labels)
    if floor is None:
        return None
    text = host.audit.nvml.driver_version
    try:
        driver = Version.parse(text, "driver version")
    except InvalidVersion:
        note = Finding(
            rule=rule_ids.HOST_LAGS,
            severity=Severity.NOTE,
            message=f"runner {host.name}: driver {text!r} unknown, floor {floor.driver} of "
            f"{floor.where} not checked",
        )
        return HostProblem(note, _runner(host), ())
    if driver >= floor.driver:
        return None
    taken = (floor.pool,) if floor.pool else tuple(x for x in labels if x not in DEFAULT_LABELS)
    what = f"pool {floor.pool}" if floor.pool else "the fleet"
    finding = Finding(
        rule=rule_ids.HOST_LAGS,
        severity=Severity.WARNING,
        message=f"runner {host.name} lags {what}: driver {driver} < floor {floor.driver}: "
        f"upgrade it or take it out of the {'pool' if floor.pool else 'fleet'}",
        fix="; ".join(label_removal(host, label) for label in taken) or None,
    )
    return HostProblem(finding, _runner(host), taken)


def label_problems(host: NamedHost) -> list[HostProblem]:
    """An error for each scheme label the host's audit contradicts; a host whose GPUs were not
    read cannot contradict a model or count (unknown), only a driver branch."""
    problems = []
    for label in host.audit.runner.labels:
        match = LABEL_SCHEME.fullmatch(label)
        if match is None:
            continue
        wrong = _contradictions(host.audit, match.group(1), int(match.group(2)), match.group(3))
        if wrong:
            finding = Finding(
                rule=rule_ids.LABEL_LIES,
                severity=Severity.ERROR,
                message=f"runner {host.name}: label {label} claims {', '.join(wrong)}",
                fix=label_removal(host, label),
            )
            problems.append(HostProblem(finding, _runner(host), (label,)))
    return problems


def _contradictions(audit: HostAudit, model: str, branch: int, count: str | None) -> list[str]:
    nvml = audit.nvml
    wrong = []
    driver = nvml.driver_version.split(".", 1)[0]
    if driver.isdigit() and int(driver) != branch:
        wrong.append(f"driver branch {branch}; the audit reads driver {nvml.driver_version}")
    names = [gpu.name for gpu in nvml.gpus]
    if names and not any(model in _squeezed(name) for name in names):
        wrong.append(f"GPU {model}; the audit reads {', '.join(sorted(set(names)))}")
    if names and count is not None and int(count) != len(names):
        wrong.append(f"{int(count)} GPUs; the audit reads {len(names)}")
    return wrong


def _squeezed(name: str) -> str:
    """`NVIDIA GeForce RTX 4090` -> `nvidiageforcertx4090`: a label's model (`rtx4090`) is
    looked for in the name without case, spaces or dashes."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def gpu_named(model: str, gpu_name: str) -> bool:
    """Whether `model` names the GPU (`T4` names `Tesla T4`, `rtx4090` names `NVIDIA GeForce
    RTX 4090`, `a10` does not name `NVIDIA A100-SXM4-80GB`): consecutive words of the name,
    joined without case, spaces or dashes, equal the model. Stricter than a label's claim
    (`_contradictions`, which must be certain to call a label false), since what it names is
    taken out of the fleet."""
    wanted = re.sub(r"[^a-z0-9]", "", model.lower())
    words = [_squeezed(word) for word in gpu_name.replace("-", " ").split()]
    return bool(wanted) and any(
        "".join(words[i:j]) == wanted
        for i in range(len(words))
        for j in range(i + 1, len(words) + 1)
    )
