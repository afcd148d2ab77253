"""Catalog of the route findings (ids GSQ: before the queue)."""

from __future__ import annotations

from gpuship.report import Rule, Severity

UNROUTABLE = "GSQ101"
SPLIT_POOL = "GSQ102"
STALE_AUDIT = "GSQ201"
MISSING_POOL = "GSQ202"
UNREADABLE_ENTRY = "GSQ203"
UNLABELLED_RUNNER = "GSQ204"
PLAN_LOSES_IMAGE = "GSQ301"
PLAN_DROPS_GPUS = "GSQ302"

RULES: tuple[Rule, ...] = (
    Rule(
        id=UNROUTABLE,
        name="route-no-pool",
        category="runtime",
        severity=Severity.ERROR,
        summary="Some pool of runners can run the image (every known host of it passes verify)",
        rationale="A job queued on a label none of whose hosts can run its image takes a GPU "
        "slot only to fail with a driver, architecture or runtime error.",
        fix="Update the driver of a pool, add the pool's GPU architecture to the image, or "
        "build a variant for an older CUDA; the finding names what each pool lacks.",
    ),
    Rule(
        id=SPLIT_POOL,
        name="route-split-pool",
        category="runtime",
        severity=Severity.WARNING,
        summary="All hosts of a runner label agree on whether they can run the image",
        rationale="A label is a pool only if any of its hosts can take the job; one host on an "
        "older driver makes the label unusable for the image, since GitHub may pick that host.",
        fix="Update the named host's driver, or take it out of the pool (remove the label) for "
        "that job.",
    ),
    Rule(
        id=STALE_AUDIT,
        name="route-stale-audit",
        category="runtime",
        severity=Severity.WARNING,
        summary="Every runner's audit is newer than route.max-audit-age",
        rationale="An old audit may describe a driver that has since changed; routing on it "
        "would trust what is no longer true.",
        fix="Let the runner's job-started hook or the systemd timer publish a fresh audit "
        "(gpuship audit --publish), or raise route.max-audit-age.",
    ),
    Rule(
        id=MISSING_POOL,
        name="route-missing-pool",
        category="runtime",
        severity=Severity.WARNING,
        summary="Every pool listed in route.pools has at least one audited runner",
        fix="Publish an audit from the pool's runners, or remove the label from route.pools.",
    ),
    Rule(
        id=UNREADABLE_ENTRY,
        name="route-unreadable-entry",
        category="runtime",
        severity=Severity.WARNING,
        summary="Every entry of the fleet inventory is a readable gpuship audit",
        fix="Publish the runner's audit again with this gpuship version.",
    ),
    Rule(
        id=UNLABELLED_RUNNER,
        name="route-unlabelled-runner",
        category="runtime",
        severity=Severity.WARNING,
        summary="Every runner publishes its audit with the labels that name its pool",
        rationale="route picks runner labels; an audit without labels belongs to no pool, so "
        "no job is ever routed to that runner, however well it could run the image.",
        fix="Publish with --label <pool label> (GPUSHIP_RUNNER_LABELS for the runner hook and "
        "timer; the scale set's name for an Actions Runner Controller scale set).",
    ),
    Rule(
        id=PLAN_LOSES_IMAGE,
        name="fleet-plan-loses-image",
        category="runtime",
        severity=Severity.ERROR,
        summary="A planned change leaves every image in use some pool that runs it "
        "(`gpuship fleet plan`)",
        rationale="An image that runs on no pool after a driver change or a retirement fails "
        "every job that pulls it, including a rollback to it.",
        fix="Keep a pool that runs the image, or build a variant the changed fleet runs first.",
    ),
    Rule(
        id=PLAN_DROPS_GPUS,
        name="fleet-plan-drops-gpus",
        category="runtime",
        severity=Severity.ERROR,
        summary="A planned driver branch still supports the GPUs of the pool it is planned for",
        rationale="NVIDIA drops GPU generations from new driver branches (R580 is the last for "
        "Maxwell, Pascal and Volta); installed there, the driver does not run those GPUs.",
        fix="Keep those hosts on their branch and out of the pool, or retire them.",
    ),
)
