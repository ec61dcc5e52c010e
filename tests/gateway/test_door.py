"""The gateway as a door: the real key goes upstream only, the token never does, strangers are refused,
a wire without an upstream says so, the upstream's errors come back as they were, streams are never
held back, and a client that leaves stops the upstream stream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import anthropic
import httpx
import openai
import pytest
from pydantic import SecretStr

from prefect_agentenv.gateway import GatewayConfig, ModelGateway, RetryPolicy, Upstream, serve_gateway
from prefect_agentenv.gateway.ledger import CallRecord
from prefect_agentenv.gateway.server import serve_asgi
from prefect_agentenv.usage import ModelPrice
from servers import Server

from .gateway_upstreams import CANARY_KEY, RUN, mock_config
from .recorder import FIRST_CHUNK, LAST_CHUNKS, USAGE_ANSWER, Recorder
from .wire_cases import CASES

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
QUICK_RETRIES = RetryPolicy(attempts=2, max_seconds=1.0, initial_backoff_seconds=0.01)
"""Two quick retries, and a ``Retry-After`` beyond a second relayed at once."""


@pytest.fixture
async def recorder() -> AsyncIterator[tuple[Recorder, str]]:
    upstream = Recorder()
    async with serve_asgi(upstream.app()) as base_url:
        yield upstream, base_url


@pytest.fixture
async def recorded(recorder: tuple[Recorder, str]) -> AsyncIterator[tuple[Recorder, ModelGateway]]:
    """A gateway whose chat and Messages wires go to the recorder (Messages with Anthropic's header)."""
    upstream, base_url = recorder
    key = SecretStr(CANARY_KEY)
    config = GatewayConfig(chat=Upstream(base_url=base_url + "/v1", api_key=key, retry=QUICK_RETRIES),
                           messages=Upstream(base_url=base_url + "/v1", auth="x-api-key", api_key=key,
                                             retry=QUICK_RETRIES))
    async with serve_gateway(config) as gateway:
        yield upstream, gateway


async def test_the_upstream_gets_the_real_key_in_its_style_and_never_the_token(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = recorded
    token = gateway.issue(RUN, "agent")
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as oai, \
            anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=token, max_retries=0) as claude:
        await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        await claude.messages.with_raw_response.create(model="m", max_tokens=5,
                                                       messages=[{"role": "user", "content": "hi"}])
    async with httpx.AsyncClient() as http:  # a client that names no API version
        await http.post(gateway.base_url + "/v1/messages", json=CHAT, headers={"x-api-key": token})

    chat, messages, bare = upstream.headers
    assert chat["authorization"] == f"Bearer {CANARY_KEY}" and "x-api-key" not in chat
    assert messages["x-api-key"] == CANARY_KEY and "authorization" not in messages
    assert messages["anthropic-version"] == anthropic.AsyncAnthropic(api_key="k").default_headers["anthropic-version"]
    assert bare["anthropic-version"] == "2023-06-01" and bare["x-api-key"] == CANARY_KEY
    assert chat["accept-encoding"] == "identity" and chat["host"] != gateway.base_url.removeprefix("http://")
    for seen in (chat, messages, bare):
        assert not any(token in value for value in seen.values())
    assert all(token.encode() not in body for body in upstream.bodies)


async def test_the_real_key_never_reaches_a_client_nor_a_log_nor_a_record(
        gateway: ModelGateway, token: str, mock_server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    answers: list[httpx.Response] = []
    async with httpx.AsyncClient(timeout=10.0) as http:
        for path, body in CASES:
            answers.append(await http.post(gateway.openai_base_url + path, json=body,
                                           headers={"authorization": f"Bearer {token}"}))
        answers.append(await http.post(gateway.openai_base_url + "/chat/completions", json=CHAT,
                                       headers={"authorization": f"Bearer {CANARY_KEY}"}))
        answers.append(await http.get(gateway.openai_base_url + "/models", headers={"x-api-key": token}))

    for answer in answers:
        assert CANARY_KEY not in answer.text and CANARY_KEY not in str(answer.headers.raw)
    assert answers[-2].status_code == 401  # the real key itself is no token
    shown = [repr(gateway), repr(gateway.config), str(gateway.config.model_dump()), caplog.text,
             *(repr(call) for call in gateway.calls(RUN)), repr(gateway.totals(RUN))]
    assert not any(CANARY_KEY in text for text in shown)
    assert mock_config(mock_server).model_dump_json().count("**********") == 3


async def test_an_unknown_or_revoked_token_gets_a_401_that_says_so_and_the_upstream_sees_nothing(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = recorded
    token, other = gateway.issue(RUN, "agent"), gateway.issue(RUN, "judge")
    for bad in ("agentenv-gw-never-issued", token):
        async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=bad, max_retries=0) as oai:
            with pytest.raises(openai.AuthenticationError, match="does not know this token"):
                await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        gateway.revoke(token)
    assert gateway.revoke_run(RUN) == 1
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=other, max_retries=0) as claude:
        with pytest.raises(anthropic.AuthenticationError, match="does not know this token") as refused:
            await claude.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])

    assert refused.value.response.headers["x-agentenv-gateway"] == "refused"
    assert upstream.headers == [] and gateway.calls(RUN) == []


async def test_a_wire_without_an_upstream_is_refused_with_an_error_naming_it(mock_server: Server) -> None:
    config = mock_config(mock_server).model_copy(update={"messages": None})
    async with serve_gateway(config) as gateway:
        token = gateway.issue(RUN, "agent")
        async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=token, max_retries=0) as claude:
            with pytest.raises(anthropic.NotFoundError) as refused:
                await claude.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])

    message = ("the model gateway has no upstream for the 'messages' wire (the Anthropic Messages API): "
               "configure GatewayConfig.messages")
    assert refused.value.body == {"type": "error", "error": {"type": "not_found_error", "message": message}}
    [call] = gateway.calls(RUN)
    assert (call.wire, call.status, call.error) == ("messages", 404, "no upstream for this wire")


@pytest.mark.parametrize(("status", "headers", "tries", "failure"), [
    (429, {"retry-after": "7", "x-ratelimit-remaining-tokens": "0"}, 1, "infrastructure"),
    (500, {}, 3, "infrastructure"), (400, {"x-request-id": "r1"}, 1, "request")])
async def test_the_upstreams_error_status_headers_and_body_come_back_unchanged_once_retries_are_spent(
        recorded: tuple[Recorder, ModelGateway], status: int, headers: dict[str, str], tries: int,
        failure: str) -> None:
    upstream, gateway = recorded
    upstream.status, upstream.answer_headers = status, headers
    upstream.answer = {"error": {"message": f"upstream said {status}", "type": "rate_limit_exceeded", "x": [1]}}
    token = gateway.issue(RUN, "agent")
    async with httpx.AsyncClient() as http:
        answer = await http.post(gateway.openai_base_url + "/chat/completions", json=CHAT,
                                 headers={"authorization": f"Bearer {token}"})

    assert answer.status_code == status and answer.json() == upstream.answer
    assert {k: answer.headers.get(k) for k in headers} == headers
    assert "x-agentenv-gateway" not in answer.headers
    [call] = gateway.calls(RUN)
    assert call.status == status and gateway.totals(RUN).failed == 1
    # A Retry-After beyond the time allowed is relayed at once; a 500 is tried again; a 400 is the request's.
    assert len(upstream.bodies) == tries and call.retries == tries - 1 and call.failure == failure


async def test_the_openai_sdk_sees_the_upstreams_429_with_its_retry_after(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = recorded
    upstream.status, upstream.answer_headers = 429, {"retry-after": "7"}
    upstream.answer = {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=gateway.issue(RUN, "agent"),
                                  max_retries=0) as oai:
        with pytest.raises(openai.RateLimitError, match="slow down") as limited:
            await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    assert limited.value.response.headers["retry-after"] == "7"


async def test_the_upstreams_usage_is_what_is_counted(recorded: tuple[Recorder, ModelGateway]) -> None:
    _, gateway = recorded
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=gateway.issue(RUN, "agent"),
                                  max_retries=0) as oai:
        await oai.chat.completions.create(model="asked-for", messages=[{"role": "user", "content": "hi"}])

    [call] = gateway.calls(RUN)
    assert USAGE_ANSWER["usage"] == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
                                     "prompt_tokens_details": {"cached_tokens": 8}}
    assert (call.input_tokens, call.output_tokens, call.cached_tokens) == (12, 3, 8)
    assert (call.requested_model, call.model) == ("asked-for", "recorded-model")


@contextlib.asynccontextmanager
async def chat_stream(gateway: ModelGateway) -> AsyncIterator[httpx.Response]:
    """A streamed chat completion through the gateway, as the run's agent asks for it."""
    headers = {"authorization": f"Bearer {gateway.issue(RUN, 'agent')}"}
    async with httpx.AsyncClient(timeout=10.0) as http, \
            http.stream("POST", gateway.openai_base_url + "/chat/completions",
                        json={**CHAT, "stream": True}, headers=headers) as answer:
        yield answer


async def recorded_call(gateway: ModelGateway) -> CallRecord:
    """The run's one call, once the gateway has recorded it (a relay records when it notices the client left)."""
    for _ in range(100):
        if gateway.calls(RUN):
            break
        await asyncio.sleep(0.02)
    [call] = gateway.calls(RUN)
    return call


async def test_a_stream_is_relayed_chunk_by_chunk_not_held_until_it_ends(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = recorded
    upstream.mode = "gated"
    async with chat_stream(gateway) as answer:
        chunks = answer.aiter_raw()
        # The upstream sends the rest only once the gate opens: a gateway that buffered would never
        # hand over the first chunk, and this read would time out.
        first = await asyncio.wait_for(anext(chunks), timeout=5.0)
        upstream.gate.set()
        rest = b"".join([chunk async for chunk in chunks])

    assert first == FIRST_CHUNK and rest == LAST_CHUNKS
    [call] = gateway.calls(RUN)
    assert call.streamed and (call.input_tokens, call.output_tokens) == (5, 1)
    assert call.first_token_seconds is not None and call.first_token_seconds < call.latency_seconds


async def test_a_client_that_leaves_mid_stream_stops_the_upstream_stream(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = recorded
    upstream.mode = "endless"
    async with chat_stream(gateway) as answer:
        async for _ in answer.aiter_raw():
            if upstream.chunks_sent >= 3:
                break

    await asyncio.wait_for(upstream.stream_closed.wait(), timeout=5.0)
    sent = upstream.chunks_sent
    await asyncio.sleep(0.1)
    assert upstream.chunks_sent == sent
    call = await recorded_call(gateway)
    assert call.error == "the client went away before the answer ended" and gateway.totals(RUN).failed == 1


async def test_a_client_that_leaves_after_the_closing_event_got_its_whole_answer(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    # Coding agents hang up once they read the stream's closing event, before the upstream's connection ends.
    upstream, gateway = recorded
    upstream.mode = "lingering"
    async with chat_stream(gateway) as answer:
        read = b""
        async for chunk in answer.aiter_raw():
            read += chunk
            if b"[DONE]" in read:
                break

    call = await recorded_call(gateway)
    upstream.gate.set()
    assert (call.error, call.failure, call.output_tokens) == (None, None, 1) and gateway.totals(RUN).failed == 0


async def test_an_upstream_that_does_not_answer_gets_a_502_naming_it() -> None:
    async with serve_asgi(Recorder().app()) as base_url:
        pass  # the port is closed now: nothing listens there
    config = GatewayConfig(chat=Upstream(base_url=base_url + "/v1", api_key=SecretStr(CANARY_KEY),
                                         retry=RetryPolicy(attempts=0)))
    async with serve_gateway(config) as gateway, httpx.AsyncClient() as http:
        answer = await http.post(gateway.openai_base_url + "/chat/completions", json=CHAT,
                                 headers={"authorization": f"Bearer {gateway.issue(RUN, 'agent')}"})

    assert answer.status_code == 502
    assert answer.json()["error"]["message"] == (
        f"the model gateway could not reach the 'chat' upstream at {base_url}/v1: ConnectError")
    [call] = gateway.calls(RUN)
    assert call.status == 502 and call.error == "the upstream did not answer: ConnectError"
    assert call.failure == "infrastructure" and call.retries == 0


async def test_a_token_issued_with_its_own_upstreams_sends_its_calls_there_and_is_priced_by_them(
        recorder: tuple[Recorder, str], gateway: ModelGateway) -> None:
    # One gateway per run, several roles: the judge's endpoint (here the recorder) is not the agent's.
    upstream, base_url = recorder
    own = GatewayConfig(chat=Upstream(base_url=base_url + "/v1", api_key=SecretStr("sk-judge-key")),
                        prices={"m": ModelPrice(input_per_million=1000.0, output_per_million=1000.0)})
    judge, agent = gateway.issue("run-2", "judge", own), gateway.issue("run-2", "agent")
    async with httpx.AsyncClient(timeout=10.0) as http:
        for token in (judge, agent):
            answer = await http.post(gateway.openai_base_url + "/chat/completions", json=CHAT,
                                     headers={"authorization": f"Bearer {token}"})
            assert answer.status_code == 200, answer.text
    (seen,) = upstream.headers  # only the judge's call reached the recorder, with the judge's key
    assert seen["authorization"] == "Bearer sk-judge-key"
    judged, acted = gateway.calls("run-2")
    assert (judged.role, acted.role) == ("judge", "agent")
    assert judged.cost_usd is not None and judged.cost_usd > 0 and acted.model == "mock"


async def test_the_request_reaches_the_upstream_byte_for_byte_with_nothing_added(
        recorded: tuple[Recorder, ModelGateway]) -> None:
    # A chat stream without stream_options.include_usage is sent on as it is: the gateway does not ask
    # for the usage the client did not (its answer would change under the client).
    upstream, gateway = recorded
    sent = b'{"model":"m",  "stream":true, "messages":[{"role":"user","content":"hi"}], "x-unknown":[1]}'
    async with httpx.AsyncClient(timeout=10.0) as http:
        await http.post(gateway.openai_base_url + "/chat/completions", content=sent,
                        headers={"authorization": f"Bearer {gateway.issue(RUN, 'agent')}",
                                 "content-type": "application/json"})

    assert upstream.bodies == [sent]
