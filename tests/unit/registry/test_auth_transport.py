"""Challenge parsing, Retry-After and the plain-HTTP rule, on data."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from gpuship.registry.auth import parse_challenge, scope_strings
from gpuship.registry.retry import retry_after_seconds
from gpuship.registry.transport import uses_plain_http


def test_bearer_challenge_with_quoted_and_space_separated_scopes():
    challenge = parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:samalba/my-app:pull,push repository:other:pull",error="invalid_token"'
    )
    assert challenge.scheme == "bearer"
    assert challenge.params["realm"] == "https://auth.docker.io/token"
    assert challenge.params["service"] == "registry.docker.io"
    assert challenge.params["scope"].split() == [
        "repository:samalba/my-app:pull,push",
        "repository:other:pull",
    ]
    assert challenge.params["error"] == "invalid_token"


def test_basic_challenge_and_scope_strings():
    assert parse_challenge('Basic realm="Registry Realm"').scheme == "basic"
    assert scope_strings({"b/x": "pull", "a/y": "pull,push"}) == [
        "repository:a/y:pull,push",
        "repository:b/x:pull",
    ]


def test_retry_after_forms():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = datetime.now(timezone.utc) + timedelta(seconds=30)
    seconds = retry_after_seconds(format_datetime(later, usegmt=True))
    assert seconds is not None
    assert 25 <= seconds <= 31


@pytest.mark.parametrize(
    ("host", "insecure", "plain"),
    [
        ("127.0.0.1:5000", [], True),
        ("127.8.9.1", [], True),
        ("localhost:5000", [], True),
        ("[::1]:5000", [], True),
        ("ghcr.io", [], False),
        ("10.0.0.5:5000", [], False),
        ("10.0.0.5:5000", ["10.0.0.5:5000"], True),
        ("reg.lan:5000", ["reg.lan"], True),
        ("reg.lan.evil.com", ["reg.lan"], False),
    ],
)
def test_plain_http_only_for_loopback_and_insecure(host: str, insecure: list[str], plain: bool):
    assert uses_plain_http(host, insecure) is plain
