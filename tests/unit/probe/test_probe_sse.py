"""Token events of OpenAI-compatible streams, fed in arbitrary pieces."""

from __future__ import annotations

from gpuship.http.sse import TokenStream

CHAT = (
    b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n'
    b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
    b'data: {"choices": [{"delta": {"content": "lo"}}]}\n\n'
    b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}}\n\n'
    b"data: [DONE]\n\n"
)


def test_role_only_first_chunk_is_not_a_token_and_usage_wins() -> None:
    stream = TokenStream()
    assert stream.feed(CHAT) == 2
    assert stream.usage_tokens == 5 and stream.done


def test_events_split_across_reads() -> None:
    stream = TokenStream()
    counts = [stream.feed(CHAT[i : i + 7]) for i in range(0, len(CHAT), 7)]
    assert sum(counts) == 2 and stream.done


def test_completions_text_and_malformed_chunks() -> None:
    stream = TokenStream()
    data = b'data: {"choices": [{"text": "a"}]}\n\ndata: {oops\n\ndata: [1]\n\n: comment\n\n'
    assert stream.feed(data) == 1
    assert stream.malformed == 2 and not stream.done
