"""Reading usage out of answers: streams cut anywhere, each wire's names, Anthropic's cache counts."""

from __future__ import annotations

import json

import pytest

from prefect_agentenv.gateway.metering import CallUsage, StreamMeter, body_usage, usage_of


def _events(*events: tuple[str | None, dict[str, object]]) -> bytes:
    return b"".join((f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


MESSAGES_STREAM = _events(
    ("message_start", {"type": "message_start", "message": {"model": "claude-x", "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 5, "output_tokens": 1}}}),
    ("ping", {"type": "ping"}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42}}),
    ("message_stop", {"type": "message_stop"}))


@pytest.mark.parametrize("size", [1, 7, 64, len(MESSAGES_STREAM)])
def test_a_stream_cut_into_any_chunks_reads_the_same(size: int) -> None:
    meter = StreamMeter("messages")
    firsts = [meter.feed(MESSAGES_STREAM[i:i + size]) for i in range(0, len(MESSAGES_STREAM), size)]

    assert meter.usage() == CallUsage(model="claude-x", input_tokens=105, output_tokens=42, cached_tokens=90)
    assert firsts.count(True) == 1


def test_the_first_token_is_the_first_chunk_with_output_not_the_role_chunk() -> None:
    meter = StreamMeter("chat")
    role = _events((None, {"model": "gpt-x", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}))
    text = _events((None, {"model": "gpt-x", "choices": [{"index": 0, "delta": {"content": "Hel"}}], "usage": None}))
    usage = _events((None, {"model": "gpt-x", "choices": [], "usage": {
        "prompt_tokens": 20, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16}}}))

    assert [meter.feed(role), meter.feed(text), meter.feed(usage + b"data: [DONE]\n\n")] == [False, True, False]
    assert meter.usage() == CallUsage(model="gpt-x", input_tokens=20, output_tokens=2, cached_tokens=16)


def test_a_responses_stream_counts_its_completed_event_and_first_delta() -> None:
    meter = StreamMeter("responses")
    stream = _events(
        ("response.created", {"type": "response.created", "response": {"model": "gpt-5", "usage": None}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "x"}),
        ("response.completed", {"type": "response.completed", "response": {"model": "gpt-5", "usage": {
            "input_tokens": 7, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}}}}))

    assert meter.feed(stream)
    assert meter.usage() == CallUsage(model="gpt-5", input_tokens=7, output_tokens=3, cached_tokens=0)


RESPONSES_END = _events(("response.completed", {"type": "response.completed", "response": {"usage": {}}}))
CHAT_END = b"data: [DONE]\n\n"


@pytest.mark.parametrize(("wire", "stream", "end"), [
    ("messages", MESSAGES_STREAM[:MESSAGES_STREAM.rindex(b"event: message_stop")], _events(("message_stop", {"type": "message_stop"}))),
    ("responses", _events(("response.output_text.delta", {"type": "response.output_text.delta",
                                                          "delta": '{"type": "response.completed"}'})), RESPONSES_END),
    ("chat", _events((None, {"choices": [{"index": 0, "delta": {"content": "data: [DONE]"}}]})), CHAT_END),
])
def test_a_stream_is_closed_by_its_wire_s_closing_event_only(wire: str, stream: bytes, end: bytes) -> None:
    # Text that spells a closing event (escaped inside a string) does not close it.
    meter = StreamMeter(wire)  # type: ignore[arg-type]
    meter.feed(stream)
    assert not meter.closed
    meter.feed(end)
    assert meter.closed


def test_whole_answers_on_each_wire_and_answers_without_usage() -> None:
    assert body_usage("chat", b'{"model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}') == CallUsage(
        model="m", input_tokens=1, output_tokens=2)
    assert body_usage("messages", b'{"model": "c", "usage": {"input_tokens": 3, "output_tokens": 4}}') == CallUsage(
        model="c", input_tokens=3, output_tokens=4)
    assert body_usage("responses", b"not json") == CallUsage()
    assert body_usage("chat", b'{"error": {"message": "no"}}') == CallUsage()
    assert usage_of("messages", {"output_tokens": 5}, None) == CallUsage(output_tokens=5)
