"""Redirect rules on data: which hop gets the Authorization header, method and body changes.

The real thing (a registry redirecting blob GETs to storage on another port) is exercised in
tests/integration/registry/test_credential_scope.py; here each rule is pinned on its own.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from gpuship.registry.errors import RegistryRequestError
from gpuship.registry.redirects import MAX_REDIRECTS, follow_redirects


def answer(status: int, location: str | None = None) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    if location is not None:
        response.headers["Location"] = location
    response._content = b""
    response.raw = io.BytesIO(b"")
    return response


@dataclass
class Script:
    """Answers in order; records (method, url, headers, kwargs) of every hop."""

    answers: Iterator[requests.Response]
    hops: list[tuple[str, str, dict[str, str], dict[str, Any]]] = field(default_factory=list)

    def __call__(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        headers = kwargs.pop("headers")
        assert kwargs.pop("allow_redirects") is False
        self.hops.append((method, url, dict(headers), kwargs))
        return next(self.answers)


AUTH = {"Authorization": "Bearer registry-token", "Accept": "x"}


def test_authorization_stays_home_and_never_reaches_storage():
    script = Script(
        iter(
            [
                answer(307, "/v2/app/blobs/other"),
                answer(302, "https://storage.example.net/blob?sig=1"),
                answer(200),
            ]
        )
    )
    final = follow_redirects(script, "GET", "https://reg.example.com/v2/app/blobs/x", AUTH)
    assert final.status_code == 200
    assert [hop[1] for hop in script.hops] == [
        "https://reg.example.com/v2/app/blobs/x",
        "https://reg.example.com/v2/app/blobs/other",
        "https://storage.example.net/blob?sig=1",
    ]
    assert [hop[2].get("Authorization") for hop in script.hops] == [
        "Bearer registry-token",
        "Bearer registry-token",
        None,
    ]
    assert script.hops[2][2]["Accept"] == "x"


def test_another_port_is_another_origin():
    script = Script(iter([answer(302, "https://reg.example.com:8443/x"), answer(200)]))
    follow_redirects(script, "GET", "https://reg.example.com/v2/", AUTH)
    assert "Authorization" not in script.hops[1][2]


def test_https_is_never_redirected_to_plain_http():
    script = Script(iter([answer(302, "http://reg.example.com/v2/")]))
    with pytest.raises(RegistryRequestError, match="plain HTTP"):
        follow_redirects(script, "GET", "https://reg.example.com/v2/", AUTH)


def test_303_becomes_get_without_body_and_307_keeps_both():
    script = Script(iter([answer(303, "/done"), answer(200)]))
    follow_redirects(
        script,
        "PUT",
        "https://reg.example.com/up",
        {**AUTH, "Content-Type": "application/octet-stream"},
        data=b"abc",
        params={"digest": "d"},
    )
    method, _, headers, kwargs = script.hops[1]
    assert method == "GET"
    assert "data" not in kwargs and "params" not in kwargs
    assert "Content-Type" not in headers
    script = Script(iter([answer(307, "/again"), answer(201)]))
    follow_redirects(script, "PUT", "https://reg.example.com/up", AUTH, data=b"abc")
    assert script.hops[1][0] == "PUT"
    assert script.hops[1][3]["data"] == b"abc"


def test_a_streamed_body_is_not_followed():
    script = Script(iter([answer(307, "https://elsewhere.example.net/up")]))
    final = follow_redirects(
        script, "PUT", "https://reg.example.com/up", AUTH, data=iter([b"chunk"])
    )
    assert final.status_code == 307
    assert len(script.hops) == 1


def test_redirect_loops_stop():
    script = Script(iter([answer(302, "/loop")] * (MAX_REDIRECTS + 1)))
    with pytest.raises(RegistryRequestError, match="redirects"):
        follow_redirects(script, "GET", "https://reg.example.com/loop", AUTH)
    assert len(script.hops) == MAX_REDIRECTS + 1
