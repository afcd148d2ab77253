"""The requests the load sends, from `probe.request` and its JSON Lines file.

http lines: {"method": "POST", "path": "/predict", "body": <JSON value or string>,
"headers": {"name": "value"}}; every key optional. completions/chat lines: the request body
itself ({"prompt": ...} or {"messages": [...]}, max_tokens, ...); the probe adds "model" when
absent and always streams ("stream": true with usage in the last chunk), since TTFT and
inter-token latency only exist for a streamed answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuship.documents import load_json, read_file
from gpuship.errors import InputError, LimitExceeded
from gpuship.http.load import RequestSpec
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.probe.config import RequestConfig

REQUEST_FIELD = "probe.request.requests-file"
SHORTAGE_FIELD = "probe.shortage.requests-file"
_JSON = (("Content-Type", "application/json"),)
_DEFAULT_PATHS = {"http": "/", "completions": "/v1/completions", "chat": "/v1/chat/completions"}


def load_requests(
    config: RequestConfig,
    file: str | None,
    base: Path,
    *,
    field: str = REQUEST_FIELD,
    limits: Limits = DEFAULT_LIMITS,
) -> list[RequestSpec]:
    """The request list: one default request when no file is given.

    `file` is the value of the config `field` (named in every error). Only a regular file
    is read: a FIFO would block the probe forever and /dev/zero never end, so anything else
    is an InputError before a read (`documents.read_file` opens without blocking and checks
    the opened file).
    """
    if file is None:
        return [_spec(config, {}, "default request")]
    path = base / file
    data = read_file(path, field, limits, "requests_file_max_bytes")
    try:
        # JSON Lines ends lines with LF (CRLF tolerated); splitlines() would also split on
        # U+2028, U+0085 or a form feed, which JSON strings may hold unescaped.
        lines = [line.removesuffix("\r") for line in data.decode("utf-8").split("\n")]
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: {field}: not UTF-8 ({error.reason})") from None
    most = limits.requests_file_max_requests
    specs: list[RequestSpec] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(specs) == most:
            detail = f"more than {most} requests"
            key = Limits.key("requests_file_max_requests")
            raise LimitExceeded(f"{path}:{number}", detail, key, most)
        item = load_json(line, f"{path}:{number}", limits)
        if not isinstance(item, dict):
            raise InputError(f"{path}:{number}: each line must be a JSON object")
        specs.append(_spec(config, item, f"{path}:{number}"))
    if not specs:
        raise InputError(f"{path}: no requests")
    return specs


def _spec(config: RequestConfig, item: dict[str, Any], where: str) -> RequestSpec:
    path = config.path or _DEFAULT_PATHS[config.kind]
    if config.kind != "http":
        fields = {"model": config.model, "max_tokens": config.max_tokens, **item}
        if config.kind == "chat" and "messages" not in fields:
            fields["messages"] = [{"role": "user", "content": "Say something."}]
        if config.kind == "completions" and "prompt" not in fields:
            fields["prompt"] = "Say something."
        fields.update(stream=True, stream_options={"include_usage": True})
        return RequestSpec("POST", path, json.dumps(fields).encode(), _JSON, streaming=True)
    method = item.get("method", config.method)
    path = item.get("path", path)
    headers = item.get("headers", {})
    if not isinstance(method, str) or not isinstance(path, str) or not path.startswith("/"):
        raise InputError(f"{where}: method must be a string and path start with '/'")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise InputError(f"{where}: headers must map names to strings")
    body_value = item.get("body")
    extra: tuple[tuple[str, str], ...] = ()
    if body_value is None:
        body = b""
    elif isinstance(body_value, str):
        body = body_value.encode()
    else:
        body, extra = json.dumps(body_value).encode(), _JSON
    return RequestSpec(method.upper(), path, body, extra + tuple(headers.items()))
