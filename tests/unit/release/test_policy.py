"""Tag policy and planning on data."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuship.errors import InputError
from gpuship.release.config import ReleaseConfig, TagPolicyConfig
from gpuship.release.policy import (
    TagAction,
    TagKind,
    TagRequest,
    classify_tags,
    matches_any,
    plan_tags,
)

OLD, NEW = "sha256:" + "1" * 64, "sha256:" + "2" * 64


@pytest.mark.parametrize(
    "tag", ["1.4.0", "v2.0.1", "1.4.0-cuda12.4", "2.1.0rc1", "1.0.0+build.5", "10.20.30-py3.11"]
)
def test_version_like_tags_are_immutable_by_default(tag: str):
    policy = TagPolicyConfig()
    assert matches_any(policy.immutable, tag)
    assert not matches_any(policy.floating, tag)


@pytest.mark.parametrize("tag", ["latest", "stable", "prod", "1", "v2", "1.4", "v1.4"])
def test_aliases_and_names_float_by_default(tag: str):
    policy = TagPolicyConfig()
    assert matches_any(policy.floating, tag)
    assert not matches_any(policy.immutable, tag)


def test_classify_refuses_contradictions():
    policy = TagPolicyConfig()
    requests = classify_tags(policy, ["1.4.0", "build-77"], ["stable"])
    assert [(r.tag, r.kind) for r in requests] == [
        ("1.4.0", TagKind.IMMUTABLE),
        ("build-77", TagKind.IMMUTABLE),  # matches neither: treated as immutable (safe side)
        ("stable", TagKind.FLOATING),
    ]
    with pytest.raises(InputError, match="--move stable"):
        classify_tags(policy, ["stable"], [])
    with pytest.raises(InputError, match="never be moved"):
        classify_tags(policy, [], ["1.4.0"])
    with pytest.raises(InputError, match="more than once"):
        classify_tags(policy, ["1.4.0"], ["1.4.0"])
    with pytest.raises(InputError, match="at least one"):
        classify_tags(policy, [], [])
    with pytest.raises(InputError, match="invalid tag"):
        classify_tags(policy, ["a b"], [])
    custom = TagPolicyConfig(immutable=["release-.*"], floating=["prod"])
    assert classify_tags(custom, [], ["1.4.0"])[0].kind is TagKind.FLOATING


def test_plan_actions_and_order():
    requests = [
        TagRequest("1.4.0", TagKind.IMMUTABLE),
        TagRequest("1.3.0", TagKind.IMMUTABLE),
        TagRequest("1.2.0", TagKind.IMMUTABLE),
        TagRequest("stable", TagKind.FLOATING),
        TagRequest("prod", TagKind.FLOATING),
        TagRequest("edge", TagKind.FLOATING),
    ]
    before = {"1.4.0": None, "1.3.0": NEW, "1.2.0": OLD, "stable": OLD, "prod": NEW, "edge": None}
    steps = plan_tags(requests, before, NEW)
    actions = {s.tag: s.action for s in steps}
    assert actions == {
        "1.4.0": TagAction.CREATE,
        "1.3.0": TagAction.UNCHANGED,
        "1.2.0": TagAction.CONFLICT,
        "stable": TagAction.MOVE,
        "prod": TagAction.UNCHANGED,
        "edge": TagAction.CREATE,
    }
    # Floating first: they are the cheap ones to undo.
    kinds = [s.kind for s in steps]
    assert kinds == sorted(kinds, key=lambda k: k is TagKind.IMMUTABLE)
    assert [s.tag for s in steps if s.writes] == ["stable", "edge", "1.4.0"]


def test_config_rejects_bad_patterns_and_keys():
    with pytest.raises(ValidationError):
        TagPolicyConfig(immutable=["("])
    with pytest.raises(ValidationError):
        ReleaseConfig.model_validate({"history-tag": "bad tag"})
    with pytest.raises(ValidationError):
        ReleaseConfig.model_validate({"retention": {"keep": [{"pattern": "x", "newest": -1}]}})
    parsed = ReleaseConfig.model_validate(
        {"retention": {"keep": [{"pattern": "nightly-.*", "newest": 3, "younger-than-days": 7}]}}
    )
    assert parsed.retention.keep[0].younger_than_days == 7
