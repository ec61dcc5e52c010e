"""Limits that hold: a run's limits and a budget shared by runs refuse the next call, in the wire's own
error shape, once reached; calls in flight finish and are counted; the SDKs do not retry a refusal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anthropic
import httpx
import openai
import pytest
from pydantic import SecretStr

from prefect_agentenv.gateway import Budget, CallLimits, GatewayConfig, ModelGateway, Upstream, serve_gateway
from prefect_agentenv.gateway.server import serve_asgi

from .gateway_upstreams import CANARY_KEY, RUN
from .recorder import Recorder
from .wire_cases import PROMPT

MESSAGES = [{"role": "user", "content": PROMPT}]


async def _chat(gateway: ModelGateway, token: str, max_retries: int = 0) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=max_retries) as oai:
        await oai.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]


@pytest.mark.parametrize(("limits", "name"), [
    (CallLimits(tokens=1), "tokens"), (CallLimits(output_tokens=1), "output_tokens"),
    (CallLimits(cost_usd=1e-9), "cost_usd"), (CallLimits(model_calls=1), "model_calls"),
    (CallLimits(tokens=10_000_000, model_calls=1), "model_calls")])
async def test_once_a_runs_limit_is_reached_its_next_call_is_refused_and_says_which(
        gateway: ModelGateway, limits: CallLimits, name: str) -> None:
    token = gateway.issue(RUN, "agent", limits=limits)
    await _chat(gateway, token)
    assert gateway.limit_reached(RUN) is None  # reached, but nothing was refused yet: not truncated

    # The SDK's own retries are on: the refusal tells it not to retry, and it does not.
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=3) as oai:
        with pytest.raises(openai.BadRequestError) as refused:
            await oai.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]

    assert refused.value.code == "limit_reached" and f"limit ({name}) has been reached" in refused.value.message
    assert refused.value.response.headers["x-agentenv-limit"] == name
    ok, no = gateway.calls(RUN)
    assert (ok.status, ok.failure, ok.limit) == (200, None, None)
    assert (no.status, no.failure, no.limit, no.input_tokens) == (400, "limit", name, None)
    totals = gateway.totals(RUN)
    assert (totals.calls, totals.refused, totals.limit_reached) == (2, 1, name)
    assert gateway.limit_reached(RUN) == name and gateway.spent(RUN).calls == 1


async def test_every_token_of_a_run_shares_its_limits_and_anthropic_clients_get_anthropics_error_shape(
        gateway: ModelGateway) -> None:
    agent = gateway.issue(RUN, "agent", limits=CallLimits(model_calls=2))
    judge, other_run = gateway.issue(RUN, "judge"), gateway.issue("run-2", "agent")
    await _chat(gateway, agent)
    await _chat(gateway, judge)
    await _chat(gateway, other_run)  # another run: its own count, no limits
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=judge, max_retries=3) as claude:
        with pytest.raises(anthropic.BadRequestError) as refused:
            await claude.messages.create(model="m", max_tokens=50, messages=MESSAGES)  # type: ignore[arg-type]

    assert refused.value.body == {"type": "error", "error": {"type": "invalid_request_error", "message": (
        "the model gateway refused this call: this task run's limit (model_calls) has been reached, so no "
        "further model calls are allowed; stop and give your final answer")}}
    assert [c.status for c in gateway.calls(RUN)] == [200, 200, 400]
    assert gateway.limit_reached("run-2") is None and gateway.totals("run-2").refused == 0


async def test_calls_started_together_never_pass_the_model_calls_limit(gateway: ModelGateway) -> None:
    token = gateway.issue(RUN, "agent", limits=CallLimits(model_calls=3))
    outcomes = await asyncio.gather(*(_chat(gateway, token) for _ in range(8)), return_exceptions=True)

    assert sum(o is None for o in outcomes) == 3
    assert all(isinstance(o, openai.BadRequestError) for o in outcomes if o is not None)
    assert gateway.totals(RUN).refused == 5


async def test_a_run_past_its_seconds_is_refused(gateway: ModelGateway) -> None:
    token = gateway.issue(RUN, "agent", limits=CallLimits(seconds=1.0))
    await _chat(gateway, token)
    await asyncio.sleep(1.05)
    with pytest.raises(openai.BadRequestError, match=r"limit \(seconds\)"):
        await _chat(gateway, token)


@pytest.fixture
async def gated() -> AsyncIterator[tuple[Recorder, ModelGateway]]:
    """A gateway whose chat wire goes to a recorder holding its streams until the test opens the gate."""
    upstream = Recorder(mode="gated")
    async with serve_asgi(upstream.app()) as base_url:
        config = GatewayConfig(chat=Upstream(base_url=base_url + "/v1", api_key=SecretStr(CANARY_KEY)))
        async with serve_gateway(config) as gateway:
            yield upstream, gateway


async def test_calls_in_flight_when_the_limit_is_crossed_finish_and_are_counted(
        gated: tuple[Recorder, ModelGateway]) -> None:
    upstream, gateway = gated
    token = gateway.issue(RUN, "agent", limits=CallLimits(tokens=5))

    async def stream() -> bytes:
        async with httpx.AsyncClient(timeout=10.0) as http:
            answer = await http.post(gateway.openai_base_url + "/chat/completions",
                                     json={"model": "m", "messages": MESSAGES, "stream": True},
                                     headers={"authorization": f"Bearer {token}"})
        return answer.content

    both = asyncio.gather(stream(), stream())
    await upstream.requests_arrived(2)  # both let through before either used a token
    upstream.gate.set()
    first, second = await both
    with pytest.raises(openai.BadRequestError, match=r"limit \(tokens\)"):
        await _chat(gateway, token)

    assert first.endswith(b"data: [DONE]\n\n") and second == first  # 6 tokens each: both past 5, both whole
    assert gateway.spent(RUN).tokens == 12 and gateway.totals(RUN).input_tokens == 10
    assert [c.failure for c in gateway.calls(RUN)] == [None, None, "limit"]


@pytest.mark.parametrize(("budget", "name"), [(Budget(tokens=1), "budget_tokens"), (Budget(usd=1e-9), "budget_usd")])
async def test_a_budget_shared_by_runs_refuses_every_runs_calls_once_spent(
        gateway: ModelGateway, budget: Budget, name: str) -> None:
    first = gateway.issue("task-run-1", "agent", budget=budget)
    second = gateway.issue("task-run-2", "agent", budget=budget)
    await _chat(gateway, first)
    assert budget.exhausted and budget.exhausted_by == name

    for token in (second, first):
        with pytest.raises(openai.BadRequestError, match=rf"the benchmark run's budget \({name}\)"):
            await _chat(gateway, token)

    [ok] = [c for c in gateway.calls("task-run-1") if c.status == 200]
    assert budget.spent().tokens == (ok.input_tokens or 0) + (ok.output_tokens or 0) > 0
    assert budget.spent().calls == 1 and budget.spent().cost_usd == pytest.approx(ok.cost_usd)
    assert gateway.limit_reached("task-run-1") == gateway.limit_reached("task-run-2") == name


def test_a_budget_needs_a_positive_amount() -> None:
    for bad in ({}, {"usd": 0.0}, {"tokens": -1}):
        with pytest.raises(ValueError, match="budget"):
            Budget(**bad)  # type: ignore[arg-type]
