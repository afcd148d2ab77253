"""The requests file: http lines, OpenAI bodies made streaming, errors with file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuship.errors import InputError
from gpuship.probe.config import RequestConfig
from gpuship.probe.requests import load_requests


def test_http_lines_take_defaults_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text(
        '{"path": "/predict", "method": "post", "body": {"x": 1}}\n\n{"headers": {"A": "b"}}\n'
    )
    specs = load_requests(RequestConfig(method="GET"), "r.jsonl", tmp_path)
    assert [(s.method, s.path) for s in specs] == [("POST", "/predict"), ("GET", "/")]
    assert specs[0].body == b'{"x": 1}' and ("Content-Type", "application/json") in specs[0].headers
    assert specs[1].headers == (("A", "b"),) and not specs[1].streaming


def test_chat_bodies_stream_with_usage_and_keep_their_own_fields(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 7}\n'
    )
    (spec,) = load_requests(RequestConfig(kind="chat", model="m"), "c.jsonl", tmp_path)
    body = json.loads(spec.body)
    assert spec.path == "/v1/chat/completions" and spec.streaming
    assert body["max_tokens"] == 7 and body["model"] == "m" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_no_file_gives_one_default_request(tmp_path: Path) -> None:
    (spec,) = load_requests(RequestConfig(kind="completions"), None, tmp_path)
    assert json.loads(spec.body)["prompt"] and spec.path == "/v1/completions"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}\nnot json\n", "r.jsonl:2: not JSON"),
        ("[1]\n", "r.jsonl:1: each line must be a JSON object"),
        ('{"path": "x"}\n', "r.jsonl:1: method must be a string and path start with '/'"),
        ("\n\n", "r.jsonl: no requests"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "r.jsonl").write_text(content)
    with pytest.raises(InputError, match=message):
        load_requests(RequestConfig(), "r.jsonl", tmp_path)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the requests file"):
        load_requests(RequestConfig(), "absent.jsonl", tmp_path)
