"""The report of `audit --publish`, built by the route stage from what publishing did and the
verify stage's report of the audit."""

from __future__ import annotations

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.report import Report
from gpuship.route.inventory import InventoryEntry
from gpuship.route.publish import PublishOutcome, publish_report
from gpuship.route.result import Published, PublishSkipped
from unit.compat.compat_builders import H100, audit, gpu

FRESH = audit(550, [gpu(**H100)], labels=["gpu-h100"])


def audit_report(taken: HostAudit) -> Report:
    return Report(command="audit", result=taken, headline="1 GPU(s)", outputs={"gpu-count": "1"})


def test_a_published_audit_says_where_and_what_it_replaced() -> None:
    previous = InventoryEntry("gpu-h100", "sha256:" + "a" * 64, FRESH)
    outcome = PublishOutcome("r.io/fleet", "gpu-h100", FRESH, None, previous, "CDI specs changed")
    report = publish_report("audit", outcome, FRESH.runner, audit_report)
    assert report.result == Published(True, "r.io/fleet:gpu-h100", FRESH)
    assert report.outputs == {"gpu-count": "1", "published": "true", "entry": "r.io/fleet:gpu-h100"}
    assert report.headline == (
        f"1 GPU(s); published to r.io/fleet:gpu-h100, replacing the audit taken "
        f"{FRESH.taken_at} (CDI specs changed)"
    )
    assert report.findings == [] and "GSQ" in "".join(report.rules)


def test_a_skipped_publish_says_why_and_an_unlabelled_runner_is_warned() -> None:
    outcome = PublishOutcome("r.io/fleet", "gpu-host", None, "entry is 5m old", None)
    runner = RunnerIdentity(hostname="gpu-host")
    report = publish_report("audit", outcome, runner, audit_report)
    assert report.result == PublishSkipped(False, "r.io/fleet:gpu-host", "entry is 5m old")
    assert report.outputs == {"published": "false", "entry": "r.io/fleet:gpu-host"}
    assert report.headline == "not published: r.io/fleet:gpu-host entry is 5m old"
    (finding,) = report.findings
    assert finding.rule in report.rules and "without labels" in finding.message
