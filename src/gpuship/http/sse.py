"""Server-sent events of an OpenAI-compatible streaming completion, read as they arrive.

Lines and events are read as the WHATWG HTML standard's "event stream interpretation" says:
lines end with CRLF, LF or CR; a blank line ends an event; `data:` lines of one event join
with LF; a line starting with `:` is a comment (a keep-alive); the first space after a field's
colon is dropped.

Each `data:` event holds a chunk; a token arrived when a chunk carries non-empty text
(for chat, `choices[0].delta` content, reasoning, refusal or a tool call's name or arguments;
`choices[0].text` for completions). Empty first chunks
(the role-only delta many servers send first) are not tokens: genai-perf and vLLM's serving
benchmark skip them too. A final chunk may carry `usage.completion_tokens`, the server's own
count, which then wins over counting chunks (a chunk can hold several tokens).

A stream is a good answer when it carried a token and no chunk a client would refuse: vLLM's
serving benchmark marks a stream without a valid chunk as failed ("Never received a valid
chunk to calculate TTFT"), and the OpenAI client raises on a `data:` payload that is not JSON
and on a chunk holding an `error`. `failure()` says which way a finished stream fell short.
A final `data: [DONE]` is not required: the body ended as HTTP says it ends (a complete
chunked message; a cut connection is a failed request before it gets here), and neither the
OpenAI client nor vLLM's benchmark requires it; TGI sent none before
huggingface/text-generation-inference#2221 (July 2024).
"""

from __future__ import annotations

import json
import re
from typing import Any

# A line longer than this (no line end in a mebibyte) is not an SSE line: it is dropped and
# the stream is a bad one, so a body without line ends cannot grow the buffer without bound.
MAX_LINE_BYTES = 1 << 20
_LINE_END = re.compile(rb"\r\n|\r|\n")
_FIELDS = frozenset({b"data", b"event", b"id", b"retry"})
# Fields of a chat delta that carry generated text. `content` and `refusal`: OpenAI's chunk
# object (ChatCompletionChunk.choices[].delta, with `tool_calls` and the deprecated
# `function_call`, whose `name` and `arguments` stream as text). `reasoning`, what vLLM's
# reasoning parser splits off, called `reasoning_content` in vLLM 0.10 and before and in
# DeepSeek's API: docs.vllm.ai/en/v0.11.2/features/reasoning_outputs/ and v0.10.0 (Qwen3
# reasons by default, and may spend a short max_tokens on reasoning alone).
_DELTA_TEXTS = ("content", "reasoning", "reasoning_content", "refusal")

# Why a finished stream is not a good answer (Sample.error kinds).
NO_TOKENS = "no-tokens"  # no chunk with text: nothing, keep-alives only, empty deltas
NOT_SSE = "not-sse"  # no data event, and lines that are no SSE field (an HTML page, JSON)
BAD_EVENT = "bad-event"  # a data payload that is not a JSON object, or a line past the limit
ERROR_EVENT = "error-event"  # a chunk holding "error", or an `event: error`


class TokenStream:
    """Feed body bytes; `feed` returns how many chunks with text the bytes completed."""

    def __init__(self) -> None:
        self._pending = b""  # the unfinished last line
        self._after_cr = False  # the last bytes ended with CR: an LF next is the same line end
        self._skipping = False  # inside a line past MAX_LINE_BYTES, until its end
        self._data: list[bytes] = []  # data lines of the event being read
        self._type = b""
        self.usage_tokens: int | None = None
        self.texts = 0  # chunks with text
        self.events = 0  # data events
        self.malformed = 0  # data payloads that are not a JSON object; lines past the limit
        self.errors = 0  # chunks holding "error", `event: error`
        self.foreign = 0  # lines that are neither a comment nor an SSE field

    def feed(self, data: bytes) -> int:
        """Read every complete line of the bytes seen so far; count the chunks with text."""
        if not data:
            return 0
        if self._after_cr and data.startswith(b"\n"):
            data = data[1:]  # the LF of a CRLF whose CR ended the last bytes
        # Also after a lone LF dropped above: the next LF starts a new line end (a blank line).
        self._after_cr = data.endswith(b"\r")
        *lines, self._pending = _LINE_END.split(self._pending + data)
        before = self.texts
        for line in lines:
            if self._skipping:
                self._skipping = False
                continue
            self._line(line)
        if len(self._pending) > MAX_LINE_BYTES:
            self._pending, self._skipping = b"", True
            self.malformed += 1
        return self.texts - before

    def finish(self) -> int:
        """The body ended: read its last line and event even without a line end after them
        (the standard drops them; a last `data: [DONE]` without one is still meant)."""
        before = self.texts
        if self._pending and not self._skipping:
            self._line(self._pending)
        self._pending = b""
        self._line(b"")
        return self.texts - before

    def failure(self) -> str | None:
        """Why the finished stream is not a good answer; None when it is."""
        if self.errors:
            return ERROR_EVENT
        if self.malformed:
            return BAD_EVENT
        if not self.texts:
            return NOT_SSE if self.foreign and not self.events else NO_TOKENS
        return None

    def _line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
            return
        if line.startswith(b":"):
            return
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name.startswith(b"\xef\xbb\xbf"):  # a byte order mark before the first field
            name = name[3:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._type = value
        elif name not in _FIELDS:
            self.foreign += 1

    def _dispatch(self) -> None:
        data, kind = b"\n".join(self._data), self._type
        self._data, self._type = [], b""
        if kind == b"error":
            self.errors += 1
        payload = data.strip()
        if not payload:
            return
        self.events += 1
        if payload == b"[DONE]":  # the end marker, no chunk
            return
        try:
            chunk: Any = json.loads(payload)
        except ValueError:
            self.malformed += 1
            return
        if not isinstance(chunk, dict):
            self.malformed += 1
            return
        if chunk.get("error") is not None or chunk.get("object") == "error":
            self.errors += 1  # OpenAI's {"error": {...}}; vLLM's ErrorResponse {"object": "error"}
        usage = chunk.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.usage_tokens = usage["completion_tokens"]
        if _has_text(chunk):
            self.texts += 1


def _has_text(chunk: dict[str, Any]) -> bool:
    """The chunk carries generated text: the answer, its reasoning, a refusal, or a tool call."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    choice = choices[0]
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return any(_nonempty(delta.get(name)) for name in _DELTA_TEXTS) or _calls(delta)
    return _nonempty(choice.get("text"))


def _calls(delta: dict[str, Any]) -> bool:
    """A tool call's name or arguments, or the deprecated `function_call`'s, grew."""
    calls = delta.get("tool_calls")
    functions = (
        [c.get("function") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    )
    functions.append(delta.get("function_call"))
    return any(
        isinstance(f, dict) and (_nonempty(f.get("name")) or _nonempty(f.get("arguments")))
        for f in functions
    )


def _nonempty(value: Any) -> bool:
    return isinstance(value, str) and value != ""
