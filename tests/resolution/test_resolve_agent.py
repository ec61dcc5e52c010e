"""Resolving an a2a_agent_id: its block, else the reference agent, else how to register one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS, ReferenceAgent
from prefect_agentenv.blocks import A2AAgent
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.resolution.block_lookup import prefect_api_configured
from prefect_agentenv.resolution.servers import resolve_agent
from prefect_agentenv.runtime.launch.base import join_url
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.resources.sandbox import create_sandbox
from prefect_agentenv.settings import get_settings
from runtime.launcher_helpers import wait_gone


@pytest.fixture
def no_prefect_api() -> Iterator[None]:
    """As if PREFECT_API_URL were unset, even after the session's harness set it."""
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield


async def test_a_reference_agent_resolves_to_its_module_command_and_its_a2a_card(no_prefect_api: None) -> None:
    assert not prefect_api_configured()
    resolved = await resolve_agent("scripted")
    assert resolved.source == "reference"
    assert resolved.a2a_agent_id == "scripted"
    assert resolved.version == REFERENCE_AGENTS["scripted"].version
    assert resolved.spec.command == REFERENCE_AGENTS["scripted"].command()
    assert resolved.spec.ready_path == "/.well-known/agent-card.json"
    assert resolved.spec.kind == "confined", "an agent under evaluation runs confined by default"


async def test_every_agent_block_with_a_command_and_no_kind_runs_confined_unless_it_opts_out(
        prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    command = ["python", "-m", "my_agent", "--port", "{port}"]
    blocks = {"default": A2AAgent(command=command), "opted-out": A2AAgent(command=command, confinement="none"),
              "process": A2AAgent(command=command, kind="process"), "asked": A2AAgent(command=command, kind="confined"),
              "remote": A2AAgent(url="https://agent.example.com")}
    names = {key: f"confine-{key}-{uuid.uuid4().hex[:8]}" for key in blocks}
    for key, block in blocks.items():
        await block.asave(names[key])

    kinds = {key: (await resolve_agent(name)).spec.kind for key, name in names.items()}
    monkeypatch.setenv("PREFECT_AGENTENV_AGENT_CONFINEMENT", "none")
    get_settings.cache_clear()
    try:
        everyone_opted_out = (await resolve_agent(names["default"])).spec.kind
    finally:
        monkeypatch.delenv("PREFECT_AGENTENV_AGENT_CONFINEMENT")
        get_settings.cache_clear()

    assert kinds == {"default": "confined", "opted-out": "process", "process": "process", "asked": "confined",
                     "remote": "url"}
    assert everyone_opted_out == "process"


async def test_an_unknown_agent_says_how_to_register_it_and_lists_the_reference_agents(no_prefect_api: None) -> None:
    # (claude-code, codex, … are harnesses this package installs: tests/agents/harnesses/test_catalog.py)
    with pytest.raises(ConfigurationError) as caught:
        await resolve_agent("my-coding-agent")
    message = str(caught.value)
    assert "no agent 'my-coding-agent'" in message
    assert ('prefect-agentenv agent register my-coding-agent --command "python -m my_agent --host {host} --port {port}"'
            in message)
    assert f"reference agents: {', '.join(sorted(REFERENCE_AGENTS))}" in message
    assert "no Prefect API is configured" in message


async def test_an_agent_id_that_cannot_name_a_block_says_so() -> None:
    with pytest.raises(ConfigurationError, match="'Claude_Code' cannot name a block"):
        await resolve_agent("Claude_Code", use_blocks=True)


async def test_an_agent_block_wins_over_the_reference_agent_of_the_same_id(
        prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # A unique id stands in for a reference agent: a block named "scripted" would change what
    # every other test of the session (they share one Prefect API) resolves.
    name = f"scripted-{uuid.uuid4().hex[:8]}"
    monkeypatch.setitem(REFERENCE_AGENTS, name, ReferenceAgent(name, "1.0.0", "prefect_agentenv.agents.scripted", ""))
    assert (await resolve_agent(name)).source == "reference"
    await A2AAgent(version="9.9.9", url="https://agent.example.com", card_path="/card.json",
                   description="A scripted agent elsewhere.").asave(name)
    resolved = await resolve_agent(name)
    assert resolved.source == "block"
    assert resolved.version == "9.9.9"
    assert resolved.spec.url == "https://agent.example.com"
    assert resolved.spec.ready_path == "/card.json"
    assert resolved.description == "A scripted agent elsewhere."
    assert (await resolve_agent(name, use_blocks=False)).source == "reference"


async def test_an_unknown_agent_with_a_prefect_api_is_a_clean_configuration_error(prefect_harness: None) -> None:
    with pytest.raises(ConfigurationError, match="no agent 'nowhere-agent'") as caught:
        await resolve_agent("nowhere-agent")
    assert "not consulted" not in str(caught.value)


async def test_the_scripted_reference_agent_starts_in_its_sandbox_and_stops_by_handle(
        tmp_path: Path, no_prefect_api: None) -> None:
    workdir = tmp_path / "run"
    workdir.mkdir()
    resolved = await resolve_agent("scripted")
    sandbox = create_sandbox(workdir, "assistant")
    launcher = ProcessLauncher(run_id="run-agent")
    instance = await launcher.start(resolved.spec, name="assistant", workdir=workdir, cwd=sandbox.root,
                                    extra_env=sandbox.env())
    try:
        assert instance.pid is not None
        async with httpx.AsyncClient(trust_env=False) as client:
            card = (await client.get(join_url(instance.base_url, resolved.spec.ready_path))).json()
        assert card["name"] == "scripted"
        # The agent reports where it maps sandbox paths: the sandbox we gave it, not the test's cwd.
        assert f"sandbox root {sandbox.root}" in (instance.stderr_path.read_text() if instance.stderr_path else "")
    finally:
        await launcher.stop(instance)
    assert wait_gone(instance.pid)
    assert launcher.instances == []
    sandbox.remove()
