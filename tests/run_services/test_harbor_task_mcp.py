"""A Harbor task's stdio MCP server bridged to loopback, over the wire: started in a real container of the example
task mcp-tool's image, talked to with the project's MCP client as an agent's would, refused outside the agent's
turn, and a server that does not start named with its stderr. Needs the local docker daemon (`make docker-up`)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from prefect_agentenv.protocols.mcp import mcp_session
from prefect_agentenv.run_services.harbor_mcp import TURN_OVER
from prefect_agentenv.run_services.harbor_task_mcp import StdioCommand, TaskServerBridge, TaskServerError

TASK = Path(__file__).resolve().parents[2] / "examples" / "harbor" / "mcp-tool"


@pytest.fixture
async def container() -> AsyncIterator[str]:
    """A running container of mcp-tool's image (built once, cached by content), removed after."""
    from image_mode import require_image_mode
    from prefect_agentenv.runtime.harbor.environment import remove_environment, start_environment
    from prefect_agentenv.runtime.harbor.images import ensure_image, source_of

    await asyncio.to_thread(require_image_mode)
    image = await ensure_image("mcp-tool", source_of(TASK / "environment", None), build_timeout=300)
    name = await start_environment(image.tag, workdir="/app", env={}, network="none", run_id=uuid.uuid4().hex)
    try:
        yield name
    finally:
        await remove_environment(name)


async def test_its_tools_are_served_as_they_are_and_a_call_runs_in_the_container(container: str,
                                                                                 tmp_path: Path) -> None:
    from prefect_agentenv.runtime.harbor.environment import read_text

    turn = asyncio.Event()
    turn.set()
    bridge = TaskServerBridge("stamper", tmp_path / "stamper.stderr", turn=turn)
    await bridge.serve()
    try:
        await bridge.connect(StdioCommand(container, "python3", ("/opt/task/stamper.py",), None, "/app"))
        async with mcp_session(bridge.url) as session:
            tools = await session.list_tools()
            stamped = await session.call_tool("stamp", {"word": "bridged"})
            turn.clear()
            late = await session.call_tool("stamp", {"word": "late"})
    finally:
        await bridge.stop()

    assert [t.name for t in tools] == ["stamp"] and tools[0].input_schema["required"] == ["word"]
    assert stamped.text == "stamped bridged: only in the image"
    assert late.is_error and late.text == TURN_OVER, "outside the agent's turn its tools run nothing"
    assert await read_text(container, "/app/stamp.txt") == "bridged: only in the image\n", "the late call never ran"


async def test_a_server_that_does_not_start_is_named_with_the_end_of_its_stderr(container: str, tmp_path: Path) -> None:
    bridge = TaskServerBridge("stamper", tmp_path / "stamper.stderr")
    await bridge.serve()
    try:
        with pytest.raises(TaskServerError) as failed:
            await bridge.connect(StdioCommand(container, "python3", ("/opt/task/missing.py",), None, "/app"))
    finally:
        await bridge.stop()

    assert "the task's MCP server 'stamper' (python3) did not start in the environment" in str(failed.value)
    assert "missing.py" in str(failed.value), "its stderr says why"


async def test_a_url_server_in_the_environment_s_network_is_relayed_and_closed_outside_the_turn(
        container: str) -> None:
    """A server listening inside the container (its network namespace is the sidecars' too), reached from the
    host through the relay: bytes both ways while the turn is on; outside it, a new connection is answered 409
    and an open one is closed."""
    import httpx

    from prefect_agentenv.run_services.harbor_task_mcp import TaskServerRelay
    from prefect_agentenv.runtime.harbor.environment import exec_in

    await exec_in(container, "cd /opt/task && (python3 -m http.server 8000 --bind 127.0.0.1 > /dev/null 2>&1 &)",
                  user=None, timeout=30)
    turn = asyncio.Event()
    turn.set()
    relay = TaskServerRelay("files", "http://localhost:8000/marker.txt", turn=turn)
    await relay.serve()
    relay.connect(container)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            fetched = None
            for _ in range(50):  # the server in the container comes up
                with contextlib.suppress(httpx.HTTPError):
                    fetched = await http.get(relay.url)
                    if fetched.status_code == 200:
                        break
                await asyncio.sleep(0.2)
            port = int(relay.url.split(":")[2].split("/")[0])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)  # held open across the turn's end
            turn.clear()
            closed = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            late = await http.get(relay.url)
    finally:
        await relay.stop()

    assert relay.url.endswith("/marker.txt") and relay.url.startswith("http://127.0.0.1:")
    assert fetched is not None and fetched.text == "only in the image\n"
    assert closed == b"", "a connection open when the turn ended is closed"
    assert late.status_code == 409 and TURN_OVER in late.text
