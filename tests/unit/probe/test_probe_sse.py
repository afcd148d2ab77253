"""Token events of OpenAI-compatible streams, fed in arbitrary pieces, and why a finished
stream is not a good answer."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuship.http.sse import MAX_LINE_BYTES, TokenStream

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
    assert stream.usage_tokens == 5 and stream.events == 5


def test_events_split_across_reads() -> None:
    stream = TokenStream()
    counts = [stream.feed(CHAT[i : i + 7]) for i in range(0, len(CHAT), 7)]
    assert sum(counts) == 2 and stream.usage_tokens == 5


def test_completions_text_and_malformed_chunks() -> None:
    stream = TokenStream()
    data = b'data: {"choices": [{"text": "a"}]}\n\ndata: {oops\n\ndata: [1]\n\n: comment\n\n'
    assert stream.feed(data) == 1
    assert stream.malformed == 2


def _finished(data: bytes, piece: int | None = None) -> TokenStream:
    stream = TokenStream()
    step = piece or len(data) or 1
    for start in range(0, len(data), step):
        stream.feed(data[start : start + step])
    stream.finish()
    return stream


@pytest.mark.parametrize("piece", [None, 1, 2, 5])
@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_of_the_standard_in_any_pieces(end: bytes, piece: int | None) -> None:
    stream = _finished(CHAT.replace(b"\n", end), piece)
    assert (stream.texts, stream.usage_tokens, stream.events) == (2, 5, 5)
    assert stream.failure() is None


def test_data_lines_of_one_event_join_and_one_space_is_dropped() -> None:
    data = b'data:{"choices":\ndata:  [{"text": "a"}]}\n\ndata:[DONE]\n\n'
    stream = _finished(data)
    assert (stream.texts, stream.events, stream.failure()) == (1, 2, None)


def test_a_last_event_without_a_line_end_still_counts() -> None:
    stream = _finished(b'data: {"choices": [{"text": "a"}]}\n\ndata: {"choices": [{"text": "b"}]}')
    assert stream.texts == 2 and stream.failure() is None


@pytest.mark.parametrize(
    "body",
    [
        CHAT.replace(b"data: [DONE]\n\n", b""),  # TGI before its PR #2221: no [DONE]
        b'data: {"choices": [{"text": "a"}]}\n\ndata: [DONE]',  # no line end after [DONE]
    ],
)
def test_a_body_that_ended_with_tokens_is_an_answer_with_or_without_done(body: bytes) -> None:
    assert _finished(body).failure() is None
    assert _finished(body, 1).failure() is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "no-tokens"),  # a 200 and nothing
        (b": keep-alive\n\n" * 50, "no-tokens"),  # keep-alives, never an event
        (  # role-only and empty deltas, a usage chunk claiming tokens, [DONE]
            b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n'
            b'data: {"choices": [{"delta": {"content": ""}}]}\n\n'
            b'data: {"choices": [], "usage": {"completion_tokens": 9}}\n\ndata: [DONE]\n\n',
            "no-tokens",
        ),
        (b"<html><body>502 Bad Gateway</body></html>\n", "not-sse"),
        (b'{"choices": [{"text": "a"}]}\n', "not-sse"),  # a JSON answer, not a stream
        (CHAT.replace(b'{"content": "lo"}', b'{"content": "lo"'), "bad-event"),
        (b"data: <html>\n\n" + CHAT, "bad-event"),
        (
            CHAT.replace(b"data: [DONE]", b'data: {"error": {"message": "engine died"}}'),
            "error-event",
        ),
        (
            CHAT.replace(b"data: [DONE]", b'data: {"object": "error", "message": "x"}'),
            "error-event",
        ),
        (b"event: error\ndata: overloaded\n\n" + CHAT, "error-event"),
    ],
)
def test_a_stream_that_is_no_good_answer_says_why(body: bytes, reason: str) -> None:
    assert _finished(body).failure() == reason
    assert _finished(body, 3).failure() == reason


def test_ttft_counts_only_chunks_with_text() -> None:
    stream = TokenStream()
    assert stream.feed(b': ping\n\ndata: {"choices": [{"delta": {"role": "a"}}]}\n\n') == 0
    assert stream.feed(b'data: {"choices": [{"delta": {"content": "x"}}]}\n\n') == 1


def test_a_body_without_line_ends_is_bounded_and_bad() -> None:
    stream = TokenStream()
    for _ in range(5):
        stream.feed(b"x" * (MAX_LINE_BYTES // 2))
    assert len(stream._pending) <= MAX_LINE_BYTES
    stream.feed(b"\n" + CHAT)
    stream.finish()
    assert stream.texts == 2 and stream.failure() == "bad-event"


def _chat(*deltas: str) -> bytes:
    events = [b'data: {"choices": [{"delta": {"role": "assistant"}}]}\n\n']
    events += [b'data: {"choices": [{"delta": %s}]}\n\n' % d.encode() for d in deltas]
    return b"".join(events) + b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    "delta",
    [
        '{"reasoning": "Let me think"}',  # vLLM 0.11+ with a reasoning parser (Qwen3)
        '{"reasoning_content": "Let me think"}',  # vLLM before, DeepSeek's API
        '{"content": null, "reasoning_content": "so"}',
        '{"refusal": "I cannot help with that"}',  # OpenAI's delta.refusal
        '{"tool_calls": [{"index": 0, "id": "c1", "type": "function",'
        ' "function": {"name": "get_weather", "arguments": ""}}]}',
        '{"tool_calls": [{"index": 0, "function": {"arguments": "{\\"city\\": "}}]}',
        '{"function_call": {"arguments": "{}"}}',  # deprecated, still OpenAI's delta
    ],
)
def test_reasoning_refusals_and_tool_calls_are_tokens(delta: str) -> None:
    stream = _finished(_chat(delta, delta))
    assert stream.texts == 2 and stream.failure() is None


def test_an_answer_spent_on_reasoning_has_its_first_token_at_the_reasoning() -> None:
    stream = TokenStream()
    assert stream.feed(_chat('{"reasoning": "hmm"}')[:-14]) == 1
    assert stream.feed(b'data: {"choices": [{"delta": {"content": "4"}}]}\n\n') == 1


@pytest.mark.parametrize(
    "delta",
    [
        '{"reasoning": ""}',
        '{"reasoning_content": null}',
        '{"tool_calls": []}',
        '{"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {}}]}',
        '{"tool_calls": [{"index": 0, "function": {"name": "", "arguments": ""}}]}',
        '{"tool_calls": "x"}',
    ],
)
def test_empty_reasoning_and_tool_call_deltas_are_no_tokens(delta: str) -> None:
    assert _finished(_chat(delta)).failure() == "no-tokens"


def _state(stream: TokenStream) -> tuple[object, ...]:
    return (
        stream.texts,
        stream.events,
        stream.malformed,
        stream.errors,
        stream.foreign,
        stream.usage_tokens,
        stream.failure(),
    )


def _pieces(data: bytes, sizes: list[int]) -> TokenStream:
    """Feed `data` in pieces of the given sizes, cycling through them (the whole at once when
    there are none)."""
    stream = TokenStream()
    texts, start = 0, 0
    for size in itertools.cycle(sizes or [len(data) + 1]):
        if start >= len(data):
            break
        texts += stream.feed(data[start : start + size])
        start += size
    texts += stream.finish()
    assert texts == stream.texts
    return stream


def test_a_blank_line_after_a_crlf_split_across_reads_still_ends_the_event() -> None:
    # "...\r", "\n", "\n": the CRLF ends the data line and the next LF is the blank line.
    stream = TokenStream()
    parts = [
        b'data: {"choices": [{"text": "a"}]}\r',
        b"\n",
        b"\n",
        b'data: {"choices": [{"text": "b"}]}\n\n',
    ]
    assert [stream.feed(p) for p in parts] == [0, 0, 1, 1]
    assert stream.malformed == 0 and stream.failure() is None


def test_a_mixed_crlf_and_lf_stream_fed_one_byte_at_a_time() -> None:
    body = (
        b'data: {"choices": [{"delta": {"content": "a"}}]}\r\n\n'
        b'data: {"choices": [{"delta": {"content": "b"}}]}\n\r\n'
        b": keep-alive\r\r"
        b'data: {"choices": [{"delta": {"content": "c"}}]}\r\n\r\n'
        b'data: {"choices": [], "usage": {"completion_tokens": 3}}\r\r\n'
        b"data: [DONE]\n\n"
    )
    whole, bytewise = _finished(body), _finished(body, 1)
    assert _state(bytewise) == _state(whole) == (3, 5, 0, 0, 0, 3, None)


_FIELD_LINES = st.sampled_from(
    [
        b'data: {"choices": [{"delta": {"content": "x"}}]}',
        b'data: {"choices": [{"text": "y"}]}',
        b'data:{"choices": [{"delta": {"role": "assistant"}}]}',
        b'data: {"choices": [], "usage": {"completion_tokens": 7}}',
        b"data: {oops",
        b"data: [DONE]",
        b"event: error",
        b": keep-alive",
        b"id: 3",
        b"<html>",
    ]
)
_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])
# An event: its lines, then the blank line that ends it, each with any of the line ends.
_EVENTS = st.lists(st.tuples(_FIELD_LINES, _ENDS), min_size=1, max_size=3).flatmap(
    lambda lines: _ENDS.map(lambda end: b"".join(line + e for line, e in lines) + end)
)


@given(
    st.lists(_EVENTS, max_size=12),
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=12),
)
def test_any_chunking_reads_as_the_whole_body(events: list[bytes], sizes: list[int]) -> None:
    body = b"".join(events)
    assert _state(_pieces(body, sizes)) == _state(_pieces(body, []))
