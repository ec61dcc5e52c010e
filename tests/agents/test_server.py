"""The agent scaffolding without servers: sandbox paths, plans, the user script, extension
declarations read from cards, and the reference agent catalogue."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.agents.scripted.plan import DEFAULT_PLAN, choose_plan
from prefect_agentenv.agents.server import AgentFailure
from prefect_agentenv.agents.state import AgentState, TrajectoryRequest
from prefect_agentenv.agents.user_sim.agent import THANKS, UserScript
from prefect_agentenv.exceptions import UnsupportedOperationError
from prefect_agentenv.protocols.a2a import A2ACard
from prefect_agentenv.protocols.agentenv_ext import (
    AGENT_CONFIG_EXTENSION,
    MCP_CONFIG_EXTENSION,
    TRAJECTORY_EXTENSION,
    AgentEnvExtensions,
    AgentExtension,
)
from prefect_agentenv.runtime.resources.sandbox import (
    SANDBOX_ROOT_VARIABLE,
    UnsafeSandboxPathError,
    create_sandbox,
    sandbox_path,
    sandbox_root,
)

# sandbox paths


def test_an_absolute_sandbox_path_maps_under_the_sandbox_root(tmp_path: Path):
    assert sandbox_path("/app/artifact/q3.png", root=tmp_path) == tmp_path / "app/artifact/q3.png"
    assert sandbox_path("/tmp/file_artifacts/a.csv", root=tmp_path) == tmp_path / "tmp/file_artifacts/a.csv"


def test_a_host_path_inside_the_root_is_kept_and_a_relative_path_is_relative_to_the_root(tmp_path: Path):
    inside = tmp_path / "app" / "artifact" / "x.txt"
    state = AgentState(config_fields=(), workdir=tmp_path / "work", root=tmp_path)

    assert state.path(inside) == inside
    # The root, not the agent's working folder: the run maps the same relative path to the same file.
    assert state.path("notes/todo.md") == tmp_path / "notes/todo.md"


def test_the_root_is_the_launch_variable_else_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(SANDBOX_ROOT_VARIABLE, str(tmp_path))
    assert sandbox_root() == tmp_path
    assert sandbox_path("/app/x") == tmp_path.resolve() / "app/x"
    monkeypatch.delenv(SANDBOX_ROOT_VARIABLE)
    assert sandbox_root() == Path.cwd()


@pytest.mark.parametrize("escape", ["/app/../../etc/passwd", "../outside.txt", "bad\0name"])
def test_a_path_that_leaves_the_sandbox_is_refused(tmp_path: Path, escape: str):
    state = AgentState(config_fields=(), workdir=tmp_path / "root", root=tmp_path / "root")
    with pytest.raises(UnsafeSandboxPathError):
        state.path(escape)


@pytest.mark.parametrize(("path", "expected"), [
    ("/app/artifact/q3.png", "app/artifact/q3.png"), ("notes/todo.md", "notes/todo.md"), (".", ""), ("/", ""),
    ("app/../app/artifact", "app/artifact"), ("/shortcut/x.txt", "app/artifact/x.txt"),
    ("{root}/trajectories/t1.json", "trajectories/t1.json"),
    ("../outside", None), ("/app/../../outside", None), ("a/../../..", None), ("bad\0name", None),
    ("/app/artifact/out/secret.txt", None), ("{root}/app/artifact/out", None),
    # A host path that leaves the root by `..` is refused, not mapped under the root a second time.
    ("{root}/../elsewhere/x.txt", None),
])
def test_an_agent_and_the_run_map_every_sandbox_path_to_the_same_file(tmp_path: Path, path: str,
                                                                      expected: str | None):
    """One mapping: what the reference agent writes is where the run's steps look for it."""
    host = create_sandbox(tmp_path / "run", "assistant")
    (tmp_path / "outside").mkdir()
    (host.root / "app" / "artifact" / "out").symlink_to(tmp_path / "outside")
    (host.root / "shortcut").symlink_to(host.root / "app" / "artifact")
    agent = AgentState(config_fields=(), workdir=host.root, root=host.root)
    text = path.format(root=host.root)

    def mapped(to: Any) -> Path | None:
        try:
            return to(text)
        except UnsafeSandboxPathError:
            return None

    assert mapped(agent.path) == mapped(host.path) == (None if expected is None else host.root / expected)


def test_a_context_trajectory_joins_its_tasks_in_order(tmp_path: Path):
    state = AgentState(config_fields=(), workdir=tmp_path, root=tmp_path)
    first, number = state.start_task("t1", "ctx")
    first.record("message", text="one")
    second, next_number = state.start_task("t2", "ctx")
    second.record("message", text="two")
    second.save()

    joined = state.trajectory(TrajectoryRequest(context_id="ctx"))
    assert (number, next_number) == (1, 2)
    assert joined is not None and [e["text"] for e in joined["trajectory"]] == ["one", "two"]
    assert json.loads((tmp_path / "trajectories" / "t2.json").read_text())["events"][0]["text"] == "two"
    assert state.trajectory(TrajectoryRequest(task_id="nope")) is None


# plans


def test_a_plan_line_in_the_prompt_wins_over_the_configured_plan(tmp_path: Path):
    prompt = 'Do it.\nPLAN:\n{"reply": "from the prompt"}\ntrailing words'
    plan, source = choose_plan(prompt, {"plan": {"reply": "from config"}}, tmp_path, 1)

    assert (plan.reply, source) == ("from the prompt", "prompt")


def test_a_list_of_plans_gives_each_turn_its_own_and_repeats_the_last(tmp_path: Path):
    config = {"plan": [{"reply": "first"}, {"reply": "second"}]}

    assert [choose_plan("go", config, tmp_path, turn)[0].reply for turn in (1, 2, 3)] == ["first", "second", "second"]


def test_a_plan_json_in_the_sandbox_is_used_when_nothing_else_gives_a_plan(tmp_path: Path):
    (tmp_path / "plan.json").write_text(json.dumps({"reply": "from the file", "sleep_seconds": 0.1}))

    plan, source = choose_plan("go", {}, tmp_path, 1)
    assert (plan.reply, plan.sleep_seconds, source) == ("from the file", 0.1, "plan.json")
    assert choose_plan("go", {}, tmp_path / "empty", 1) == (DEFAULT_PLAN, "default")


@pytest.mark.parametrize("prompt", ["PLAN: not json", 'PLAN: {"reply": "x", "unknown": 1}', "PLAN: []"])
def test_a_broken_plan_is_a_bad_plan_failure(tmp_path: Path, prompt: str):
    with pytest.raises(AgentFailure) as caught:
        choose_plan(prompt, {}, tmp_path, 1)
    assert caught.value.error_type == "bad_plan"


# the user script


def test_by_default_the_user_thanks_the_agent_and_is_done_after_the_first_turn():
    assert UserScript().answer(1) == (THANKS, True)


def test_scripted_user_replies_come_in_order_then_the_user_thanks_and_is_done():
    script = UserScript(replies=["more detail", "and a chart"])

    assert [script.answer(turn) for turn in (1, 2, 3)] == [("more detail", False), ("and a chart", False),
                                                            (THANKS, True)]
    assert UserScript(replies=["a", "b", "c"], done_after=2).answer(2) == ("b", True)


# extension declarations


def _card(extensions: list[dict[str, Any]], base: str = "http://agent:9/team/") -> A2ACard:
    raw = {"name": "helper", "url": "/a2a", "protocolVersion": "0.3.0", "capabilities": {"extensions": extensions}}
    return A2ACard.from_raw(raw, base_url=base, card_url=base + ".well-known/agent.json")


async def _closed_client() -> httpx.AsyncClient:
    """Any request on it raises: proves a refusal came from the card, before the wire."""
    client = httpx.AsyncClient()
    await client.aclose()
    return client


async def test_an_agent_without_the_mcp_config_extension_is_refused_before_any_request():
    extensions = AgentEnvExtensions(_card([{"uri": AGENT_CONFIG_EXTENSION}]), await _closed_client())

    with pytest.raises(UnsupportedOperationError) as caught:
        await extensions.add_mcp_server("http://env/mcp", name="email")
    message = str(caught.value)
    assert "agent 'helper'" in message and MCP_CONFIG_EXTENSION in message and "http://env/mcp" in message
    assert caught.value.operation == MCP_CONFIG_EXTENSION


async def test_a_trajectory_by_context_is_refused_when_the_card_reads_only_by_task():
    card = _card([{"uri": TRAJECTORY_EXTENSION, "params": {"endpoint": "/ext/trajectory", "methods": {
        "get": {"request": {"required": ["task_id"]}}}}}])

    with pytest.raises(UnsupportedOperationError, match="not by context_id"):
        await AgentEnvExtensions(card, await _closed_client()).get_trajectory(context_id="ctx")


def test_methods_given_as_a_list_a_map_or_not_at_all_become_operations():
    card = _card([])
    listed = AgentExtension.from_card({"uri": MCP_CONFIG_EXTENSION, "params": {"endpoint": "/mcp-cfg",
                                                                               "methods": ["add"]}}, card)
    mapped = AgentExtension.from_card({"uri": AGENT_CONFIG_EXTENSION, "params": {"methods": {
        "set": {"method": "put", "endpoint": "cfg", "request": {"supported": ["model"]}}}}}, card)
    silent = AgentExtension.from_card({"uri": TRAJECTORY_EXTENSION}, card)

    assert (listed.operations["add"].http_method, listed.operations["add"].url) == ("POST", "http://agent:9/mcp-cfg")
    assert (mapped.operations["set"].http_method, mapped.operations["set"].url) == ("PUT", "http://agent:9/team/cfg")
    assert mapped.supported_fields == ["model"]
    assert (silent.operations["get"].http_method, silent.operations["get"].url) == (
        "POST", "http://agent:9/ext/trajectory")


async def test_a_card_that_lists_no_supported_fields_gets_every_field_but_none_values():
    extensions = AgentEnvExtensions(_card([{"uri": AGENT_CONFIG_EXTENSION}]), await _closed_client())

    assert extensions.filter_agent_config({"model": "m", "max_turns": 3, "system_prompt": None}) == (
        {"model": "m", "max_turns": 3}, [])


# catalogue


def test_the_catalogue_lists_the_reference_agents_with_their_launch_commands():
    assert set(REFERENCE_AGENTS) == {"scripted", "user-sim", "llm", "judge"}
    assert REFERENCE_AGENTS["user-sim"].command()[1:] == [
        "-m", "prefect_agentenv.agents.user_sim", "--host", "{host}", "--port", "{port}"]
    for agent_id in ("scripted", "user-sim"):
        assert importlib.util.find_spec(REFERENCE_AGENTS[agent_id].module + ".__main__") is not None
