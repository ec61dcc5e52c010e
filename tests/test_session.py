"""The notebook API: a session with a real env and agent, a prompt, and a turn-by-turn interaction."""

from __future__ import annotations

import httpx
import pytest

from prefect_agentenv.session import AgentSession
from steps.helpers import publish_examples


async def test_a_session_prompts_the_agent_talks_turn_by_turn_and_cleans_up(agentenv_home) -> None:
    publish_examples()
    plan = [{"tool_calls": [{"tool": "send", "arguments": {"to": "dana@northwind.example", "subject": "Hi",
                                                         "body": "Hello Dana"}}], "reply": "Sent."},
            {"reply": "Anything else?"}, {"reply": "Bye."}]
    async with AgentSession(envs={"email": "inbox"}, agent="scripted", agent_config={"plan": plan}) as session:
        response = await session.prompt("Say hello to Dana.")
        assert response.response == "Sent." and response.tool_call_count == 1 and response.error is None
        state = await session.env_state("email")
        assert [m["subject"] for m in state["sent"]] == ["Hi"]
        async with session.interaction() as chat:
            first = await chat.turn("hello")
            second = await chat.turn("no, thanks")
        assert (first.text, second.text) == ("Sent.", "Anything else?")
        assert not second.done
        agent_url = session.ctx.deployed_agents["assistant"].a2a_url
    with pytest.raises(httpx.TransportError):
        httpx.get(agent_url + "/.well-known/agent-card.json", timeout=2)
