"""The genuine ``openai`` and ``anthropic`` SDKs through the gateway to the mock model, on every wire,
streamed and not: answers arrive as the mock sent them, streams stream, and the gateway counts
the tokens the mock reported."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest

from prefect_agentenv.gateway import CallLimits, ModelGateway
from servers import Server

from .gateway_upstreams import RUN
from .wire_cases import CASES, MOCK_IDS, PROMPT


async def _raw(url: str, body: dict[str, Any], key: str) -> tuple[int, str, bytes]:
    async with httpx.AsyncClient(timeout=10.0) as http:
        answer = await http.post(url, json=body, headers={"authorization": f"Bearer {key}"})
    return answer.status_code, answer.headers["content-type"], MOCK_IDS.sub(rb"\1N", answer.content)


@pytest.mark.parametrize(("path", "body"), CASES, ids=[f"{p}{'-stream' if b.get('stream') else ''}-{i}"
                                                        for i, (p, b) in enumerate(CASES)])
async def test_an_answer_through_the_gateway_is_byte_for_byte_the_one_straight_from_the_upstream(
        gateway: ModelGateway, token: str, mock_server: Server, path: str, body: dict[str, Any]) -> None:
    through = await _raw(gateway.openai_base_url + path, body, token)
    straight = await _raw(mock_server.url("/v1" + path), body, "sk-direct")

    assert through == straight
    assert through[0] == 200 and len(through[2]) > 200


async def test_openai_chat_completions_whole_are_answered_and_counted(gateway: ModelGateway, token: str) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as client:
        answer = await client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": PROMPT}])

    assert answer.choices[0].message.content == f'mock reply: received "{PROMPT}"'
    [call] = gateway.calls(RUN)
    assert answer.usage is not None
    assert (call.wire, call.streamed, call.status, call.requested_model, call.model) == (
        "chat", False, 200, "gpt-x", "mock")
    assert (call.input_tokens, call.output_tokens) == (answer.usage.prompt_tokens, answer.usage.completion_tokens)
    assert call.first_token_seconds is None and 0 < call.first_byte_seconds <= call.latency_seconds  # type: ignore[operator]


async def test_openai_chat_completions_streamed_arrive_in_many_chunks_and_count_the_usage_chunk(
        gateway: ModelGateway, token: str) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as client:
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": PROMPT}],
                                                      stream=True, stream_options={"include_usage": True})
        chunks = [chunk async for chunk in stream]

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == f'mock reply: received "{PROMPT}"' and len(chunks) > 5
    usage = chunks[-1].usage
    [call] = gateway.calls(RUN)
    assert usage is not None and call.streamed
    assert (call.input_tokens, call.output_tokens) == (usage.prompt_tokens, usage.completion_tokens)
    assert call.first_byte_seconds <= call.first_token_seconds <= call.latency_seconds  # type: ignore[operator]


async def test_a_chat_stream_without_include_usage_is_counted_as_unmetered_and_escapes_token_limits_not_call_limits(
        gateway: ModelGateway) -> None:
    # The gateway does not add include_usage (docs/models-and-keys.md says why): the call's tokens are
    # unknown, so a token limit cannot see them; model_calls and seconds still hold.
    token = gateway.issue(RUN, "agent", limits=CallLimits(tokens=1, model_calls=2))
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as client:
        for _ in range(2):
            stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                          stream=True)
            chunks = [chunk async for chunk in stream]
            assert len(chunks) > 1 and all(chunk.usage is None for chunk in chunks)
        with pytest.raises(openai.BadRequestError, match=r"limit \(model_calls\)"):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    first, second, refused = gateway.calls(RUN)
    assert (first.input_tokens, first.output_tokens, first.model, first.metered) == (None, None, "mock", False)
    assert second.status == 200 and not second.metered and refused.limit == "model_calls"
    totals = gateway.totals(RUN)
    assert (totals.unmetered, totals.input_tokens, totals.refused) == (2, 0, 1)


async def test_the_responses_api_whole_and_streamed_is_answered_and_counted(gateway: ModelGateway, token: str) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as client:
        whole = await client.responses.create(model="m", input=PROMPT)
        stream = await client.responses.create(model="m", input=PROMPT, stream=True)
        events = [event async for event in stream]

    assert whole.output_text == f'mock reply: received "{PROMPT}"'
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == whole.output_text and len(deltas) > 3
    completed = events[-1]
    assert completed.type == "response.completed" and completed.response.usage is not None
    first, second = gateway.calls(RUN)
    assert whole.usage is not None and (first.wire, first.streamed, second.streamed) == ("responses", False, True)
    assert (first.input_tokens, first.output_tokens) == (whole.usage.input_tokens, whole.usage.output_tokens)
    assert (second.input_tokens, second.output_tokens) == (completed.response.usage.input_tokens,
                                                           completed.response.usage.output_tokens)
    assert second.first_token_seconds is not None


async def test_anthropic_messages_whole_and_streamed_are_answered_and_counted(gateway: ModelGateway,
                                                                              token: str) -> None:
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=token, max_retries=0) as client:
        whole = await client.messages.create(model="claude-x", max_tokens=500,
                                             messages=[{"role": "user", "content": PROMPT}])
        async with client.messages.stream(model="claude-x", max_tokens=500,
                                          messages=[{"role": "user", "content": PROMPT}]) as stream:
            events = [event async for event in stream]
            final = await stream.get_final_message()

    [block] = whole.content
    assert block.type == "text" and block.text == f'mock reply: received "{PROMPT}"'
    [streamed] = final.content
    assert streamed.type == "text" and streamed.text == block.text and sum(e.type == "text" for e in events) > 3
    first, second = gateway.calls(RUN)
    assert (first.wire, first.streamed, second.streamed, first.requested_model) == (
        "messages", False, True, "claude-x")
    for call, usage in ((first, whole.usage), (second, final.usage)):
        assert (call.input_tokens, call.output_tokens, call.cached_tokens) == (
            usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens)


async def test_the_anthropic_sdk_may_send_the_token_as_a_bearer_token(gateway: ModelGateway, token: str) -> None:
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, auth_token=token, max_retries=0) as client:
        answer = await client.messages.create(model="m", max_tokens=50, messages=[{"role": "user", "content": "hi"}])

    assert answer.model == "mock" and len(gateway.calls(RUN)) == 1


async def test_models_are_listed_through_the_upstream_of_the_clients_wire(gateway: ModelGateway, token: str) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as oai, \
            anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=token, max_retries=0) as claude:
        listed = [model.id async for model in oai.models.list()]
        one = await oai.models.retrieve("mock")
        anthropic_listed = [model.id async for model in claude.models.list()]

    assert listed == anthropic_listed == ["mock"] and one.id == "mock"
    assert gateway.calls(RUN) == []


async def test_a_runs_totals_add_up_its_calls_and_price_them(gateway: ModelGateway, token: str) -> None:
    other = gateway.issue("run-2", "judge")
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as mine, \
            openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=other, max_retries=0) as theirs:
        for _ in range(3):
            await mine.chat.completions.create(model="m", messages=[{"role": "user", "content": PROMPT}])
        await theirs.responses.create(model="m", input="hi")

    calls = gateway.calls(RUN)
    totals = gateway.totals(RUN)
    assert {c.role for c in calls} == {"agent"} and [c.role for c in gateway.calls("run-2")] == ["judge"]
    assert (totals.calls, totals.failed, totals.unmetered) == (3, 0, 0)
    assert totals.input_tokens == sum(c.input_tokens or 0 for c in calls)
    expected = (totals.input_tokens * 1.0 + totals.output_tokens * 2.0) / 1_000_000
    assert totals.cost_usd == pytest.approx(expected) and totals.usage().cost_usd == totals.cost_usd
    gateway.forget(RUN)
    assert gateway.totals(RUN).calls == 0 and gateway.totals("run-2").calls == 1

