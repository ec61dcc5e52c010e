"""The A2A client against real agents on loopback: the scripted reference agent (a2a-sdk 1.x
server, 1.0 and 0.3 compat) and a hand-written 0.3-only agent that answers like AgentEnv agents.

The hand-written agent stays because these tests need behaviours on demand — a failure, a hang
past the timeout, a blocking answer to a non-blocking send — and a log of what it received; no
genuine agent offers those. The genuine AgentEnv SDK agent (0.3) and a plain a2a-sdk 1.0 agent are
exercised end to end in ``tests/conformance/``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import A2AClientError, A2AClientTimeoutError
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from google.protobuf import json_format

from prefect_agentenv.exceptions import AgentTimeoutError, ProtocolError
from prefect_agentenv.protocols.a2a import (
    A2ACard,
    A2AClient,
    PromptTimeoutError,
    as_protocol_error,
    fetch_card,
    reply_from_result,
)
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
from servers import AGENT_CARD, Server, free_port, python_server, running

LEGACY_AGENT = str(Path(__file__).with_name("legacy_a2a_agent.py"))


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """The scripted agent (in its own sandbox) and the 0.3-only agent, started together."""
    sandbox = tmp_path_factory.mktemp("scripted-sandbox")
    logs = tmp_path_factory.mktemp("a2a-logs")
    with running({
        "scripted": Server(python_server("-m", "prefect_agentenv.agents.scripted"), ready=AGENT_CARD,
                           log=logs / "scripted.log", cwd=sandbox, name="the scripted agent"),
        "legacy": Server(python_server(LEGACY_AGENT), ready="/.well-known/agent.json", log=logs / "legacy.log",
                         cwd=logs, name="the 0.3-only agent"),
    }) as servers:
        yield servers


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0) as client:
        yield client


def _legacy_log(agents: dict[str, Server]) -> list[str]:
    return httpx.get(agents["legacy"].base_url + "/_log", timeout=5).json()


# A2A 1.0


async def test_a_1_0_agent_is_prompted_through_the_sdk_client(agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["scripted"].base_url, http=http)
    reply = await client.send('PLAN: {"reply": "hello from 1.0"}', poll_interval_seconds=0.02, timeout_seconds=10)

    assert (reply.protocol_version, reply.state, reply.text) == ("1.0", "completed", "hello from 1.0")
    assert reply.tool_call_count == 0 and isinstance(reply.tool_call_count, int)
    assert reply.error is None and reply.task_id and reply.context_id
    assert reply.trajectory and reply.trajectory.endswith(f"{reply.task_id}.json")


async def test_a_1_0_conversation_continues_in_its_context(agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["scripted"].base_url, http=http)
    first = await client.send('PLAN: {"reply": "turn {turn}"}', poll_interval_seconds=0.02)
    second = await client.send('PLAN: {"reply": "turn {turn}"}', context_id=first.context_id,
                               poll_interval_seconds=0.02)

    assert (first.text, second.text) == ("turn 1", "turn 2")
    assert second.context_id == first.context_id and second.task_id != first.task_id


async def test_a_1_0_task_past_its_timeout_is_cancelled_quickly(agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["scripted"].base_url, http=http)
    started = time.monotonic()
    with pytest.raises(PromptTimeoutError) as caught:
        await client.send('PLAN: {"sleep_seconds": 30}', timeout_seconds=0.5, poll_interval_seconds=0.05)

    assert time.monotonic() - started < 3
    assert isinstance(caught.value, AgentTimeoutError) and isinstance(caught.value, TimeoutError)
    assert caught.value.reply.is_timeout and caught.value.reply.state == "canceled"
    assert (await client.get_task(caught.value.reply.task_id or "")).state == "canceled"


async def test_the_client_knows_whether_the_agent_may_still_be_working_on_its_prompts(
        agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["scripted"].base_url, http=http)
    assert not client.may_be_working
    await client.send('PLAN: {"reply": "quick"}', timeout_seconds=10, poll_interval_seconds=0.05)
    assert not client.may_be_working  # completed

    cut = asyncio.ensure_future(client.send('PLAN: {"sleep_seconds": 30}', timeout_seconds=60,
                                            poll_interval_seconds=0.05))
    await asyncio.sleep(1.0)
    cut.cancel()  # the run stops while the prompt is polled: nobody asks the agent to stop
    with pytest.raises(asyncio.CancelledError):
        await cut
    assert client.may_be_working

    timed_out = A2AClient(agents["scripted"].base_url, http=http)
    with pytest.raises(PromptTimeoutError):  # a timeout cancels its task: that one is over
        await timed_out.send('PLAN: {"sleep_seconds": 30}', timeout_seconds=0.5, poll_interval_seconds=0.05)
    assert not timed_out.may_be_working  # the agent reported the task canceled


# A2A 0.3


async def test_the_1_x_server_answers_message_send_in_compat_mode(agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["scripted"].base_url, http=http, protocol="0.3")
    reply = await client.send('PLAN: {"reply": "hello from 0.3"}', poll_interval_seconds=0.02, timeout_seconds=10)

    assert (reply.protocol_version, reply.state, reply.text) == ("0.3", "completed", "hello from 0.3")
    assert reply.tool_call_count == 0 and reply.trajectory


async def test_a_0_3_only_agent_is_found_at_the_older_card_path_with_its_relative_url_resolved(
        agents: dict[str, Server], http: httpx.AsyncClient):
    base = agents["legacy"].base_url
    card = await fetch_card(base, http=http)

    assert card.card_url == base + "/.well-known/agent.json"
    assert card.interface() == (base + "/a2a", "0.3")


async def test_an_agent_reached_by_its_json_rpc_url_is_found_through_the_card_at_its_origin(
        agents: dict[str, Server], http: httpx.AsyncClient):
    base = agents["legacy"].base_url
    reply = await A2AClient(base + "/a2a", http=http).send("sync via the rpc url")

    assert (reply.state, reply.text) == ("completed", "echo: sync via the rpc url")


async def test_a_0_3_agent_reply_is_read_from_its_status_message_and_trailing_data_part(
        agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["legacy"].base_url, http=http)
    reply = await client.send("hello", poll_interval_seconds=0.05, timeout_seconds=10)

    assert (reply.protocol_version, reply.state, reply.text) == ("0.3", "completed", "echo: hello")
    assert reply.tool_call_count == 3
    assert reply.usage == {"tool_call_count": 3, "input_tokens": 12}
    assert reply.trajectory == f"s3://trajectories/{reply.task_id}.json"
    assert "message/send" in _legacy_log(agents) and "tasks/get" in _legacy_log(agents)


async def test_a_0_3_agent_that_fails_gives_a_typed_error(agents: dict[str, Server], http: httpx.AsyncClient):
    reply = await A2AClient(agents["legacy"].base_url, http=http).send("fail please", poll_interval_seconds=0.05)

    assert reply.state == "failed" and reply.text == "I could not do it."
    assert reply.error is not None
    assert (reply.error.type, reply.error.code, reply.error.message) == ("model_error", "E_MODEL", "the model refused")


async def test_a_0_3_agent_that_answers_synchronously_is_not_polled(agents: dict[str, Server], http: httpx.AsyncClient):
    before = _legacy_log(agents).count("tasks/get")
    reply = await A2AClient(agents["legacy"].base_url, http=http).send("sync now")

    assert (reply.state, reply.text) == ("completed", "echo: sync now")
    assert _legacy_log(agents).count("tasks/get") == before


async def test_a_0_3_task_past_its_timeout_is_cancelled_with_tasks_cancel(
        agents: dict[str, Server], http: httpx.AsyncClient):
    client = A2AClient(agents["legacy"].base_url, http=http)
    started = time.monotonic()
    with pytest.raises(PromptTimeoutError, match=r"did not finish within 0\.4s") as caught:
        await client.send("sleep 30", timeout_seconds=0.4, poll_interval_seconds=0.05)

    assert time.monotonic() - started < 3
    assert caught.value.reply.state == "canceled" and caught.value.reply.is_timeout
    assert _legacy_log(agents)[-1] == "tasks/cancel"


async def test_a_0_3_agent_config_is_filtered_to_the_fields_its_card_supports(
        agents: dict[str, Server], http: httpx.AsyncClient):
    extensions = await AgentEnvExtensions.of(A2AClient(agents["legacy"].base_url, http=http))
    result = await extensions.set_agent_config(
        {"model": "m-1", "max_turns": 5, "temperature": 0.1, "system_prompt": None})

    assert result.sent == {"model": "m-1"}
    assert result.dropped == ["max_turns", "temperature"]
    assert _legacy_log(agents)[-1] == "agent-config"


# errors at the boundary


async def test_an_agent_that_is_not_running_is_a_protocol_error_naming_its_url(http: httpx.AsyncClient):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProtocolError, match="could not connect to the agent") as caught:
        await A2AClient(url, http=http).send("hello")
    assert caught.value.url is not None and caught.value.url.startswith(url)


async def test_an_unknown_task_is_a_protocol_error_with_the_json_rpc_code(
        agents: dict[str, Server], http: httpx.AsyncClient):
    for base, protocol in ((agents["scripted"].base_url, "1.0"), (agents["legacy"].base_url, "0.3")):
        with pytest.raises(ProtocolError) as caught:
            await A2AClient(base, http=http).get_task("no-such-task")
        assert caught.value.code == -32001, protocol


def _status_error() -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://agent/")
    return httpx.HTTPStatusError("boom", request=request, response=httpx.Response(502, request=request))


def _wrapped(cause: BaseException) -> A2AClientError:
    try:
        raise A2AClientError("Network communication error") from cause
    except A2AClientError as exc:
        return exc


@pytest.mark.parametrize(("foreign", "expected"), [
    (httpx.ConnectError("refused"), ProtocolError),
    (httpx.ReadTimeout("slow"), AgentTimeoutError),
    (httpx.RemoteProtocolError("closed"), ProtocolError),
    (_status_error(), ProtocolError),
    (_wrapped(httpx.ConnectError("refused")), ProtocolError),
    (_wrapped(httpx.ReadTimeout("slow")), AgentTimeoutError),
    (A2AClientTimeoutError("Client Request timed out"), AgentTimeoutError),
    (TaskNotFoundError(), ProtocolError),
    (InvalidParamsError("bad"), ProtocolError),
    (A2AClientError("Invalid JSON-RPC response"), ProtocolError),
    (json_format.ParseError("bad card"), ProtocolError),
    (ValueError("Response has neither task nor message"), ProtocolError),
    (KeyError("result"), ProtocolError),
])
def test_every_foreign_error_maps_to_a_package_error(foreign: BaseException, expected: type[Exception]):
    mapped = as_protocol_error(foreign, "http://agent/", "SendMessage")

    assert type(mapped) is expected
    assert "http://agent/" in str(mapped)


def test_a_2_connection_refused_inside_the_sdk_wrapper_is_named_as_such():
    mapped = as_protocol_error(_wrapped(httpx.ConnectError("[Errno 111] Connection refused")), "http://a/", "GetTask")
    assert "could not connect" in str(mapped) and "Connection refused" in str(mapped)


# reading replies


def test_a_1_0_task_json_is_read_with_its_numbers_made_whole_again():
    usage = {"tool_call_count": 2.0, "model": "m"}
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED", "message": {
        "role": "ROLE_AGENT", "parts": [{"text": "done"}, {"data": {"usage": usage}}]}}}
    reply = reply_from_result(task, "1.0")

    assert (reply.state, reply.text, reply.tool_call_count, reply.model) == ("completed", "done", 2, "m")
    assert reply.usage == {"tool_call_count": 2, "model": "m"}


def test_a_reply_without_status_text_falls_back_to_the_artifacts_then_the_history():
    from_artifacts = {"kind": "task", "id": "t", "status": {"state": "completed"},
                      "artifacts": [{"parts": [{"kind": "text", "text": "in an artifact"},
                                               {"kind": "data", "data": {"tool_call_count": 4}}]}]}
    from_history = {"kind": "task", "id": "t", "status": {"state": "completed"},
                    "history": [{"role": "user", "parts": [{"kind": "text", "text": "q"}]},
                                {"role": "agent", "parts": [{"kind": "text", "text": "in the history"}]}]}

    assert (reply_from_result(from_artifacts).text, reply_from_result(from_artifacts).tool_call_count) == (
        "in an artifact", 4)
    assert reply_from_result(from_history).text == "in the history"


def test_a_failed_task_without_an_error_part_still_gets_an_error():
    reply = reply_from_result({"kind": "task", "id": "t", "status": {"state": "rejected"}})

    assert reply.error is not None and reply.error.type == "task_rejected"


def test_a_nested_error_object_and_truncation_flags_are_read():
    reply = reply_from_result({"kind": "message", "messageId": "m", "parts": [
        {"kind": "text", "text": "partial"},
        {"kind": "data", "data": {"error": {"type": "max_turns", "code": "TRUNC"}, "is_truncated": True}}]})

    assert reply.state == "completed" and reply.is_truncated
    assert reply.error is not None and (reply.error.type, reply.error.code, reply.error.message) == (
        "max_turns", "TRUNC", "partial")


def test_a_card_without_a_json_rpc_endpoint_in_the_wanted_dialect_is_refused():
    card = A2ACard.from_raw({"name": "x", "supportedInterfaces": [
        {"url": "/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]},
        base_url="http://h/", card_url="http://h/.well-known/agent-card.json")

    with pytest.raises(ProtocolError, match="offers no JSON-RPC A2A endpoint"):
        card.interface()
