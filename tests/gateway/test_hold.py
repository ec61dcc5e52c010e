"""``control pause --now``: a held gateway keeps an agent's next model call waiting, lets the judge's
through, and relays the held call once released, counted as one call that took the time it took upstream."""

from __future__ import annotations

import asyncio

import openai

from prefect_agentenv.gateway import serve_gateway
from prefect_agentenv.gateway.hold import ModelHold
from servers import Server

from .gateway_upstreams import RUN, mock_config
from .wire_cases import PROMPT

MESSAGES = [{"role": "user", "content": PROMPT}]


async def _chat(base_url: str, token: str) -> str | None:
    async with openai.AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0) as oai:
        answer = await oai.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    return answer.choices[0].message.content


async def test_a_held_agent_waits_at_its_next_model_call_and_goes_on_when_released(mock_server: Server) -> None:
    hold = ModelHold()
    async with serve_gateway(mock_config(mock_server), hold=hold) as gateway:
        agent, judge = gateway.issue(RUN, "agent"), gateway.issue(RUN, "judge")
        hold.hold()
        held = asyncio.create_task(_chat(gateway.openai_base_url, agent))
        await asyncio.sleep(1.0)
        assert not held.done() and hold.waiting == 1, "the agent's call went through a held gateway"
        assert await _chat(gateway.openai_base_url, judge), "the judge is not held"
        lasted = hold.release()
        assert lasted >= 1.0
        assert await asyncio.wait_for(held, 30)
        assert hold.waiting == 0
        agent_calls = [c for c in gateway.calls(RUN) if c.role == "agent"]
        assert len(agent_calls) == 1 and agent_calls[0].status == 200
        assert agent_calls[0].latency_seconds < lasted, "a held call's time starts when it goes"


async def test_a_call_cancelled_while_held_leaves_no_waiter_behind(mock_server: Server) -> None:
    hold = ModelHold()
    async with serve_gateway(mock_config(mock_server), hold=hold) as gateway:
        hold.hold()
        held = asyncio.create_task(_chat(gateway.openai_base_url, gateway.issue(RUN, "agent")))
        await asyncio.sleep(0.6)
        held.cancel()
        await asyncio.gather(held, return_exceptions=True)
        for _ in range(50):  # the server notices the client went away at its next poll
            if hold.waiting == 0:
                break
            await asyncio.sleep(0.1)
        assert hold.waiting == 0
        hold.release()
        assert gateway.calls(RUN) == [], "a call that never went is not recorded"
