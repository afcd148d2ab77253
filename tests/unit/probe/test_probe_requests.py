"""The requests file: http lines, OpenAI bodies made streaming, errors with file:line."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.errors import InputError, LimitExceeded
from gpuship.limits import DEFAULT_LIMITS
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
    with pytest.raises(InputError, match=r"cannot read probe\.request\.requests-file"):
        load_requests(RequestConfig(), "absent.jsonl", tmp_path)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    # Read as a file, a FIFO with no writer blocks the probe forever.
    os.mkfifo(tmp_path / "r.jsonl")
    field = "probe.shortage.requests-file"
    with pytest.raises(InputError) as error:
        load_requests(RequestConfig(), "r.jsonl", tmp_path, field=field)
    assert str(error.value) == f"{tmp_path / 'r.jsonl'}: {field} is not a regular file (a FIFO)"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_before_it_is_read(tmp_path: Path, device: str) -> None:
    # /dev/zero and /dev/urandom never end (their size is 0, so a size check lets them in).
    with pytest.raises(InputError, match=r"probe.request.requests-file is not a regular file"):
        load_requests(RequestConfig(), device, tmp_path)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "requests").mkdir()
    with pytest.raises(InputError, match="is not a regular file"):
        load_requests(RequestConfig(), "requests", tmp_path)


def test_size_at_the_limit_and_past_it(tmp_path: Path) -> None:
    line = b'{"path": "/a"}\n'
    (tmp_path / "r.jsonl").write_bytes(line * 4)
    at = DEFAULT_LIMITS.override(requests_file_max_bytes=len(line) * 4)
    assert len(load_requests(RequestConfig(), "r.jsonl", tmp_path, limits=at)) == 4
    past = DEFAULT_LIMITS.override(requests_file_max_bytes=len(line) * 4 - 1)
    with pytest.raises(LimitExceeded, match=r"limit limits\.requests-file-max-bytes"):
        load_requests(RequestConfig(), "r.jsonl", tmp_path, limits=past)


def test_requests_at_the_limit_and_past_it(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('{"path": "/a"}\n\n{"path": "/b"}\n{"path": "/c"}\n')
    at = DEFAULT_LIMITS.override(requests_file_max_requests=3)
    assert len(load_requests(RequestConfig(), "r.jsonl", tmp_path, limits=at)) == 3
    past = DEFAULT_LIMITS.override(requests_file_max_requests=2)
    with pytest.raises(LimitExceeded, match=r"r.jsonl:4: more than 2 requests \(limit limits"):
        load_requests(RequestConfig(), "r.jsonl", tmp_path, limits=past)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # Past the decoder's recursion guard: a RecursionError traceback and exit 4 before.
        ("[" * 100_000 + "]" * 100_000, "JSON nests deeper than 64 levels"),
        ('{"body": ' + "[" * 65 + "]" * 65 + "}", "JSON nests deeper than 64 levels"),
        ('{"body": [' + "0," * 200_000 + "0]}", "JSON holds 200002 commas and brackets"),
    ],
)
def test_each_line_is_held_to_the_json_limits(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "r.jsonl").write_text('{"path": "/a"}\n' + line + "\n")
    with pytest.raises(LimitExceeded) as error:
        load_requests(RequestConfig(), "r.jsonl", tmp_path)
    assert str(error.value).startswith(f"{tmp_path / 'r.jsonl'}:2: {message} (limit limits.json-")


def test_a_too_deep_line_is_a_usage_error_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "gpuship.yaml").write_text("probe:\n  request:\n    requests-file: r.jsonl\n")
    out, log = io.StringIO(), io.StringIO()
    code = main(["--config", str(tmp_path / "gpuship.yaml"), "probe", "img"], {}, out, log)
    assert code == 2, log.getvalue()
    assert log.getvalue() == (
        f"gpuship: error: {tmp_path / 'r.jsonl'}:1: JSON nests deeper than 64 levels"
        " (limit limits.json-max-depth: 64)\n"
    )


# Those JSON leaves unescaped; control characters (form feed, \x1c) it always escapes.
@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_prompt_holding_a_unicode_line_separator_is_one_line(
    tmp_path: Path, separator: str
) -> None:
    # Valid JSON Lines: JSON strings may hold these unescaped (ensure_ascii=False).
    prompt = f"first{separator}second"
    lines = [json.dumps({"prompt": prompt}, ensure_ascii=False), '{"prompt": "b"}']
    (tmp_path / "r.jsonl").write_text("\r\n".join(lines) + "\n", newline="")
    specs = load_requests(RequestConfig(kind="completions"), "r.jsonl", tmp_path)
    assert [json.loads(s.body)["prompt"] for s in specs] == [prompt, "b"]
