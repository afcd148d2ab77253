"""Catalog entries for the findings of the build command."""

from __future__ import annotations

from gpuship.report import Rule, Severity

BUILD_FAILED = Rule(
    id="GSB301",
    name="build-failed",
    category="runtime",
    severity=Severity.ERROR,
    summary="The image builder stopped with an error at this Dockerfile instruction.",
    fix="Read the builder's message; fix the instruction or the build context.",
    configurable=False,
)

PUSH_REFUSED = Rule(
    id="GSB302",
    name="push-refused",
    category="release",
    severity=Severity.ERROR,
    summary="The registry refused a tag of the build; the tag set is incomplete.",
    rationale="A candidate pushed under some tags but not others must not be promoted.",
    fix="Check the credentials and permissions for the repository, then rebuild.",
    configurable=False,
)

RULES: tuple[Rule, ...] = (BUILD_FAILED, PUSH_REFUSED)
