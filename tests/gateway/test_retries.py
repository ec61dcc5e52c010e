"""Provider rate limits absorbed in the gateway: 429s and 5xx retried with backoff and ``Retry-After``
honoured, within a bounded time, counted on the call; what finally fails is infrastructure; and no
more calls in flight to an upstream than it allows. The SDKs run with ``max_retries=0``: every retry
seen here is the gateway's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import openai
import pytest
from pydantic import SecretStr

from prefect_agentenv.gateway import GatewayConfig, ModelGateway, RetryPolicy, Upstream, serve_gateway
from prefect_agentenv.gateway.retries import retry_after_seconds
from prefect_agentenv.gateway.server import serve_asgi

from .gateway_upstreams import CANARY_KEY, RUN
from .recorder import Recorder

MESSAGES = [{"role": "user", "content": "hi"}]
FAST = RetryPolicy(attempts=3, max_seconds=5.0, initial_backoff_seconds=0.02)


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Recorder, str]]:
    recorder = Recorder()
    async with serve_asgi(recorder.app()) as base_url:
        yield recorder, base_url + "/v1"


def _config(base_url: str, retry: RetryPolicy = FAST, max_concurrency: int | None = None) -> GatewayConfig:
    return GatewayConfig(chat=Upstream(base_url=base_url, api_key=SecretStr(CANARY_KEY), retry=retry,
                                       max_concurrency=max_concurrency))


async def _chat(gateway: ModelGateway) -> str | None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=gateway.issue(RUN, "agent"),
                                  max_retries=0) as oai:
        answer = await oai.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    return answer.choices[0].message.content


async def test_a_429_with_retry_after_is_waited_out_and_the_client_only_sees_the_answer(
        upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.script = [(429, {"retry-after": "1"})]
    async with serve_gateway(_config(base_url)) as gateway:
        assert await _chat(gateway) == "ok"

    first, second = recorder.arrivals
    assert 0.95 <= second - first < 3.0  # Retry-After (1 s) honoured, not the 20 ms backoff
    assert recorder.headers[1]["authorization"] == f"Bearer {CANARY_KEY}"
    [call] = gateway.calls(RUN)
    assert (call.status, call.retries, call.failure, call.input_tokens) == (200, 1, None, 12)
    assert gateway.totals(RUN).retries == 1 and gateway.totals(RUN).failed == 0


async def test_a_503_storm_that_subsides_is_absorbed(upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.script = [(503, {}), (502, {}), (529, {})]
    async with serve_gateway(_config(base_url)) as gateway:
        assert await _chat(gateway) == "ok"

    [call] = gateway.calls(RUN)
    assert (call.status, call.retries, call.failure) == (200, 3, None) and len(recorder.bodies) == 4


async def test_a_503_storm_that_outlasts_the_retries_reaches_the_client_as_infrastructure(
        upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.script = [(503, {"x-request-id": "storm"})] * 10
    async with serve_gateway(_config(base_url)) as gateway:
        with pytest.raises(openai.InternalServerError, match="scripted 503") as failed:
            await _chat(gateway)

    assert failed.value.response.headers["x-request-id"] == "storm" and len(recorder.bodies) == 4
    [call] = gateway.calls(RUN)
    assert (call.status, call.retries, call.failure) == (503, 3, "infrastructure")
    totals = gateway.totals(RUN)
    assert (totals.infrastructure, totals.retries, totals.refused) == (1, 3, 0)


async def test_retrying_stops_once_the_time_allowed_is_spent(upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.script = [(503, {})] * 1000
    policy = RetryPolicy(attempts=1000, max_seconds=0.3, initial_backoff_seconds=0.05, max_backoff_seconds=0.1)
    async with serve_gateway(_config(base_url, policy)) as gateway, httpx.AsyncClient() as http:
        started = asyncio.get_running_loop().time()
        answer = await http.post(gateway.openai_base_url + "/chat/completions", json={"model": "m"},
                                 headers={"authorization": f"Bearer {gateway.issue(RUN, 'agent')}"})
        took = asyncio.get_running_loop().time() - started

    assert answer.status_code == 503 and took < 1.5
    [call] = gateway.calls(RUN)
    assert 2 <= call.retries == len(recorder.bodies) - 1 < 20


async def test_a_retry_after_longer_than_the_time_allowed_is_relayed_at_once(upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.script = [(429, {"retry-after": "30"})]
    async with serve_gateway(_config(base_url)) as gateway:
        with pytest.raises(openai.RateLimitError) as limited:
            await _chat(gateway)

    assert limited.value.response.headers["retry-after"] == "30" and len(recorder.bodies) == 1
    [call] = gateway.calls(RUN)
    assert (call.retries, call.failure) == (0, "infrastructure")


async def test_an_upstream_that_never_answers_is_tried_again_then_a_502_classified_as_infrastructure() -> None:
    async with serve_asgi(Recorder().app()) as base_url:
        pass  # nothing listens there now
    async with serve_gateway(_config(base_url + "/v1", RetryPolicy(attempts=2, initial_backoff_seconds=0.01))) \
            as gateway:
        with pytest.raises(openai.InternalServerError, match="could not reach"):
            await _chat(gateway)

    [call] = gateway.calls(RUN)
    assert (call.status, call.retries, call.failure) == (502, 2, "infrastructure")


async def test_an_upstreams_max_concurrency_holds_further_calls_until_a_stream_ends(
        upstream: tuple[Recorder, str]) -> None:
    recorder, base_url = upstream
    recorder.mode = "gated"
    async with serve_gateway(_config(base_url, max_concurrency=1)) as gateway, \
            httpx.AsyncClient(timeout=10.0) as http:
        headers = {"authorization": f"Bearer {gateway.issue(RUN, 'agent')}"}

        async def stream() -> int:
            answer = await http.post(gateway.openai_base_url + "/chat/completions",
                                     json={"model": "m", "stream": True}, headers=headers)
            return answer.status_code

        both = asyncio.gather(stream(), stream())
        await recorder.requests_arrived(1)
        await asyncio.sleep(0.3)
        held = len(recorder.bodies)  # the first stream holds the only slot, waiting at the gate
        recorder.gate.set()
        assert await both == [200, 200]

    assert held == 1 and len(recorder.bodies) == 2


def test_retry_after_is_read_in_seconds_as_an_http_date_and_in_milliseconds() -> None:
    now = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(httpx.Headers({"retry-after": "2.5"}), now) == 2.5
    assert retry_after_seconds(httpx.Headers({"retry-after": "Fri, 04 Dec 2026 12:00:07 GMT"}), now) == 7.0
    assert retry_after_seconds(httpx.Headers({"retry-after": "Fri, 04 Dec 2026 11:59:00 GMT"}), now) == 0.0
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "150", "retry-after": "9"}), now) == 0.15
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"}), now) is None
    assert retry_after_seconds(httpx.Headers({}), now) is None



@pytest.mark.parametrize(("quota", "third_waits"), [({"requests_per_minute": 2}, True),
                                                   ({"tokens_per_minute": 15}, True),
                                                   ({"tokens_per_minute": 100}, False)])
async def test_a_per_minute_quota_holds_the_call_that_would_exceed_it_until_the_minute_has_room(
        upstream: tuple[Recorder, str], monkeypatch: pytest.MonkeyPatch, quota: dict[str, int],
        third_waits: bool) -> None:
    # The minute is shortened to 1 s; every answer costs 15 tokens (the recorder's usage).
    from prefect_agentenv.gateway import retries

    monkeypatch.setattr(retries, "WINDOW_SECONDS", 1.0)
    recorder, base_url = upstream
    config = GatewayConfig(chat=Upstream(base_url=base_url, api_key=SecretStr(CANARY_KEY), retry=FAST, **quota))
    async with serve_gateway(config) as gateway:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _chat(gateway)
        await _chat(gateway) if "requests_per_minute" in quota else None
        before_third = loop.time() - started
        await _chat(gateway)
        took = loop.time() - started
    assert len(recorder.bodies) == (3 if "requests_per_minute" in quota else 2)
    if third_waits:
        assert took >= 0.9 > before_third, (before_third, took)  # held until the first call left the minute
    else:
        assert took < 0.9, took
