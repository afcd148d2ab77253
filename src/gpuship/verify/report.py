"""Turn a verdict into the shared Report: findings, a checks table, result data, outputs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Check, Status
from gpuship.compat.fleet import Fleet
from gpuship.compat.needs import ImageGpuNeeds
from gpuship.compat.rule_ids import HOST_LAGS, LABEL_LIES
from gpuship.compat.verdict import Verdict
from gpuship.files import write_atomically
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.report.result import to_json
from gpuship.verify import rules
from gpuship.verify.result import CheckResult, FleetResult, GridCell, ImageNeeds, VerifyResult
from gpuship.verify.rules import RULES
from gpuship.verify.tables import gpu_table, host_table

_MARK = {"ok": "ok", "warn": "warn", "fail": "FAIL"}
_SEVERITY = {Status.FAIL: Severity.ERROR, Status.WARN: Severity.WARNING, Status.NOTE: Severity.NOTE}


def check_finding(check: Check) -> Finding | None:
    """A finding for each check worth reporting (fail, warn, note)."""
    severity = _SEVERITY.get(check.status)
    if severity is None:
        return None
    return Finding(
        rule=check.rule,
        severity=severity,
        message=f"{check.subject}: {check.message}",
        fix=check.fix,
    )


def check_result(check: Check) -> CheckResult:
    """A check as the report's result shows it."""
    return CheckResult(check.rule, check.status.value, check.subject, check.message, check.fix)


def needs_result(needs: ImageGpuNeeds) -> ImageNeeds:
    """The image's needs as the verify result shows them."""
    return ImageNeeds(
        image=needs.reference,
        cuda=needs.cuda,
        cuda_source=needs.cuda_source,
        min_driver=needs.min_driver,
        arch_list=None
        if needs.arch_targets is None
        else tuple(str(target) for target in needs.arch_targets),
        arch_source=needs.arch_source,
        compat_cuda=needs.compat_cuda,
        compat_source=needs.compat_source,
        require={k: v for k, v in sorted(needs.env.items()) if k.startswith("NVIDIA_")},
    )


def verdict_report(
    command: str,
    verdict: Verdict,
    audit: HostAudit,
    needs: ImageGpuNeeds | None,
    extra_checks: tuple[Check, ...] = (),
    host_findings: Sequence[Finding] = (),
) -> Report:
    """The `verify` report; `failed` when any check failed. `host_findings` are about the host
    itself (`compat.hosts`: below its driver floor, a label its audit contradicts)."""
    if extra_checks:
        verdict = Verdict(verdict.checks + extra_checks)
    findings = [f for f in (check_finding(c) for c in verdict.checks) if f is not None]
    findings.extend(host_findings)
    status = verdict.status
    target = needs.reference if needs else "GPU jobs"
    runner = audit.runner.display_name
    headline = {
        Status.OK: f"{runner} can run {target}",
        Status.WARN: f"{runner} can run {target}, with warnings",
        Status.FAIL: f"{runner} cannot run {target}: {verdict.reason}",
    }[status]
    checks_table = Table(
        title="Checks",
        headers=("check", "subject", "status", "detail"),
        rows=tuple(
            (c.rule.removeprefix("verify-"), c.subject, c.status.value, c.message)
            for c in verdict.checks
        ),
    )
    return Report(
        command=command,
        findings=findings,
        result=VerifyResult(
            verdict=status.value,
            reason=verdict.reason,
            runner=runner,
            driver=audit.nvml.driver_version,
            cuda=audit.nvml.cuda_driver_version,
            image=needs_result(needs) if needs else None,
            checks=tuple(check_result(c) for c in verdict.checks),
        ),
        rules=rules_by_id(RULES),
        tables=[checks_table, gpu_table(audit), host_table(audit)],
        outputs={"verdict": status.value, "reason": verdict.reason},
        # A label the audit contradicts is an error about this host: the verdict fails too.
        failed=status is Status.FAIL or _any_error(host_findings),
        headline=headline,
    )


def fleet_report(fleet: Fleet, host_findings: Sequence[Finding] = ()) -> Report:
    """Grid table, summary facts, findings for unplaceable images and exclusions, and the
    findings about hosts themselves (`compat.hosts`: lagging their floor, lying labels)."""
    grid = Table(
        title="Images x runners",
        headers=("image", *fleet.runners),
        rows=tuple(
            (
                image,
                *(
                    _cell_text(
                        fleet.cell(image, runner).verdict.status.value,
                        fleet.cell(image, runner).verdict.reason,
                    )
                    for runner in fleet.runners
                ),
            )
            for image in fleet.images
        ),
    )
    exclusions = fleet.exclusions()
    findings = [
        Finding(
            rule=rules.FLEET_UNPLACEABLE,
            severity=Severity.ERROR,
            message=f"{image} runs on no runner of the fleet",
            fix="install a newer driver on some runners or build a variant for an older CUDA",
        )
        for image in fleet.unrunnable_images
    ]
    for image, runners in exclusions.items():
        for runner in runners:
            if image in fleet.unrunnable_images:
                continue
            findings.append(
                Finding(
                    rule=rules.FLEET_EXCLUDE,
                    severity=Severity.WARNING,
                    message=f"{image} cannot run on {runner}: "
                    f"{fleet.cell(image, runner).verdict.reason}",
                    fix=f"exclude runner label {runner} for {image}",
                )
            )
    findings.extend(host_findings)
    facts = Table(
        title="Fleet",
        headers=("", "value"),
        rows=(
            ("oldest driver in the fleet", fleet.oldest_driver),
            ("driver that runs every image natively", fleet.driver_for_all_images or "unknown"),
            ("images no runner can run", ", ".join(fleet.unrunnable_images) or "none"),
            ("runners that run no image", ", ".join(fleet.useless_runners) or "none"),
        ),
    )
    exclude = {image: runners for image, runners in exclusions.items() if runners}
    runnable_on = {image: fleet.runnable_on(image) for image in fleet.images}
    result = FleetResult(
        runners=fleet.runners,
        images=fleet.images,
        cells=tuple(
            GridCell(cell.image, cell.runner, cell.verdict.status.value, cell.verdict.reason)
            for cell in fleet.cells
        ),
        oldest_driver=fleet.oldest_driver,
        driver_for_all_images=fleet.driver_for_all_images,
        driver_unknown_for=fleet.driver_unknown_for,
        unrunnable_images=fleet.unrunnable_images,
        runners_running_nothing=fleet.useless_runners,
        exclude=exclude,
        runnable_on=runnable_on,
    )
    ok = sum(1 for c in fleet.cells if c.verdict.status.value != "fail")
    catalog = rules_by_id(rules.RULES)
    return Report(
        command="fleet",
        findings=findings,
        result=result,
        rules={
            r: catalog[r]
            for r in (rules.FLEET_UNPLACEABLE, rules.FLEET_EXCLUDE, HOST_LAGS, LABEL_LIES)
        },
        tables=[grid, facts],
        outputs={
            "runnable-on": json.dumps(to_json(runnable_on), separators=(",", ":")),
            "exclude": json.dumps(to_json(exclude), separators=(",", ":")),
            "unrunnable-images": json.dumps(to_json(fleet.unrunnable_images)),
        },
        failed=bool(fleet.unrunnable_images) or _any_error(host_findings),
        headline=f"{ok} of {len(fleet.cells)} image x runner pairs can run; "
        f"{len(fleet.unrunnable_images)} image(s) run nowhere",
    )


def _any_error(findings: Sequence[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)


def _cell_text(status: str, reason: str) -> str:
    mark = _MARK.get(status, status)
    return f"{mark}: {reason}" if reason else mark


def audit_report(command: str, audit: HostAudit, json_file: Path | None) -> Report:
    """The audit as a report (tables, outputs) and, with `json_file`, as a bare document
    there (the `json-file` output names it)."""
    document = audit.model_dump(mode="json")
    nvml = audit.nvml
    names = sorted({gpu.name for gpu in nvml.gpus})
    outputs = {
        "driver-version": nvml.driver_version,
        "cuda-version": nvml.cuda_driver_version,
        "gpu-count": str(len(nvml.gpus)),
        "gpu-names": ", ".join(names),
        "audit": json.dumps(document, separators=(",", ":")),
    }
    if json_file is not None:
        write_atomically(json_file, json.dumps(document, indent=2) + "\n", "audit")
        outputs["json-file"] = str(json_file)
    return Report(
        command=command,
        result=audit,
        tables=[gpu_table(audit), host_table(audit)],
        outputs=outputs,
        headline=f"{len(nvml.gpus)} GPU(s) ({', '.join(names)}), driver {nvml.driver_version} "
        f"(CUDA {nvml.cuda_driver_version})",
    )
