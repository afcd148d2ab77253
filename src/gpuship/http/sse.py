"""Server-sent events of an OpenAI-compatible streaming completion, read as they arrive.

Each `data:` event holds a chunk; a token arrived when a chunk carries non-empty text
(`choices[0].delta.content` for chat, `choices[0].text` for completions). Empty first chunks
(the role-only delta many servers send first) are not tokens: genai-perf and vLLM's serving
benchmark skip them too. A final chunk may carry `usage.completion_tokens`, the server's own
count, which then wins over counting chunks (a chunk can hold several tokens).
"""

from __future__ import annotations

import json
from typing import Any


class TokenStream:
    """Feed body bytes; `feed` returns how many chunks with text the bytes completed."""

    def __init__(self) -> None:
        self._pending = b""
        self.usage_tokens: int | None = None
        self.done = False
        self.malformed = 0

    def feed(self, data: bytes) -> int:
        """Parse every complete event in the bytes seen so far; count those carrying text."""
        self._pending += data
        texts = 0
        while True:
            end = self._pending.find(b"\n\n")
            if end < 0:
                return texts
            event, self._pending = self._pending[:end], self._pending[end + 2 :]
            texts += self._event(event)

    def _event(self, event: bytes) -> int:
        payload = b"".join(
            line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
        )
        if not payload:
            return 0
        if payload == b"[DONE]":
            self.done = True
            return 0
        try:
            chunk: Any = json.loads(payload)
        except ValueError:
            self.malformed += 1
            return 0
        if not isinstance(chunk, dict):
            self.malformed += 1
            return 0
        usage = chunk.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.usage_tokens = usage["completion_tokens"]
        return 1 if _chunk_text(chunk) else 0


def _chunk_text(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    if isinstance(delta, dict) and isinstance(delta.get("content"), str):
        return str(delta["content"])
    text = choice.get("text")
    return text if isinstance(text, str) else ""
