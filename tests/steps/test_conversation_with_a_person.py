"""A conversation whose user is a person at an A2A endpoint: their text is the next prompt as it is."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from servers import free_port

from .helpers import run_doc

pytestmark = pytest.mark.usefixtures("published")

PERSON = Path(__file__).resolve().parents[1] / "protocols" / "legacy_a2a_agent.py"


@pytest.fixture
def person_url() -> Iterator[str]:
    """Someone answering over A2A 0.3 (here: a minimal agent that echoes what it is told)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(PERSON), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/.well-known/agent.json", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_the_persons_reply_is_the_next_prompt_as_it_is(person_url: str) -> None:
    report = await run_doc([
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "depends_on": []},
        {"id": "talk", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "talk", "prompt": "Hello",
         "max_conversation_turns": 2, "user_a2a_url": person_url},
    ])
    assert report.status == "completed", report.error
    # turn 1: "I received: Hello"; the person echoes it; turn 2 answers the echo verbatim.
    assert report.context.prompt_responses["talk"].response == "I received: echo: I received: Hello"


async def test_a_person_named_by_deploy_human_agent_is_the_default_user_of_a_conversation(person_url: str) -> None:
    report = await run_doc([
        {"id": "person", "type": "deploy_human_agent", "a2a_url": person_url, "depends_on": []},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "depends_on": []},
        {"id": "talk", "type": "prompt_agent", "prompt": "Hello", "max_conversation_turns": 2},
    ])
    assert report.status == "completed", report.error
    # no agent or user named: AgentEnv's defaults, default-agent talking to human_agent
    assert report.context.prompt_responses["talk"].response == "I received: echo: I received: Hello"
    assert [h.model_dump() for h in report.context.metadata.human_agents] == [
        {"step_id": "person", "agent_name": "human_agent", "a2a_url": person_url}]


async def test_a_person_without_an_endpoint_is_a_clear_error() -> None:
    report = await run_doc([{"id": "person", "type": "deploy_human_agent"}])

    assert report.status == "failed"
    assert "set a2a_url, or run with --override human_a2a_url=URL" in (report.error or "")
