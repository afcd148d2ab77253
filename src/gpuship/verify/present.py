"""Turn a verdict into the shared Report: findings, a checks table, result data, outputs."""

from __future__ import annotations

from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id
from gpuship.verify.audit import HostAudit
from gpuship.verify.needs import ImageGpuNeeds
from gpuship.verify.rules import RULES
from gpuship.verify.tables import gpu_table, host_table
from gpuship.verify.verdict import Check, Status, Verdict

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


def check_as_dict(check: Check) -> dict[str, str | None]:
    """A check as JSON for the report's result."""
    return {
        "rule": check.rule,
        "status": check.status.value,
        "subject": check.subject,
        "message": check.message,
        "fix": check.fix,
    }


def verdict_report(
    command: str,
    verdict: Verdict,
    audit: HostAudit,
    needs: ImageGpuNeeds | None,
    extra_checks: tuple[Check, ...] = (),
) -> Report:
    """The `verify` report; `failed` when any check failed."""
    if extra_checks:
        verdict = Verdict(verdict.checks + extra_checks)
    findings = [f for f in (check_finding(c) for c in verdict.checks) if f is not None]
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
        result={
            "verdict": status.value,
            "reason": verdict.reason,
            "runner": runner,
            "driver": audit.nvml.driver_version,
            "cuda": audit.nvml.cuda_driver_version,
            "image": needs.as_dict() if needs else None,
            "checks": [check_as_dict(c) for c in verdict.checks],
        },
        rules=rules_by_id(RULES),
        tables=[checks_table, gpu_table(audit), host_table(audit)],
        outputs={"verdict": status.value, "reason": verdict.reason},
        failed=status is Status.FAIL,
        headline=headline,
    )
