"""What a Harbor task's own stdio MCP server costs a trial, phase by phase, and what one call costs through it.

On the local docker daemon (`make docker-up`) and the example task mcp-tool's image: one container, then N
rounds of what a run does for the task's server (``serve``: its loopback server started; ``connect``: its
command started by ``docker exec -i`` and the MCP handshake; ``first_list``: an agent's session opened and
its tools listed, as an agent's first look; ``stop``), and M tool calls through it, each against the same
call made straight to the command's session (what the loopback hop adds). Then what the relay to a server in
the environment's network (a sidecar's URL) costs: M requests, each on a new connection (its own ``docker exec``
of bash's ``/dev/tcp``), to a small HTTP server in the container. Medians.

    .venv/bin/python benchmarks/harbor_task_mcp.py [--rounds 7] [--calls 20]

Writes benchmarks/results/harbor_task_mcp.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from prefect_agentenv.protocols.mcp import mcp_session
from prefect_agentenv.run_services.harbor_task_mcp import StdioCommand, TaskServerBridge
from prefect_agentenv.runtime.harbor.environment import remove_environment, start_environment
from prefect_agentenv.runtime.harbor.images import ensure_image, source_of

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "harbor" / "mcp-tool"
RESULTS = ROOT / "benchmarks" / "results" / "harbor_task_mcp.json"


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


async def one_round(container: str, scratch: Path, calls: int) -> dict[str, Any]:
    phases: dict[str, float] = {}
    turn = asyncio.Event()
    turn.set()
    bridge = TaskServerBridge("stamper", scratch / "stamper.stderr", turn=turn)
    t0 = time.perf_counter()
    await bridge.serve()
    phases["serve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    await bridge.connect(StdioCommand(container, "python3", ("/opt/task/stamper.py",), None, "/app"))
    phases["connect"] = time.perf_counter() - t0
    through: list[float] = []
    straight: list[float] = []
    try:
        t0 = time.perf_counter()
        async with mcp_session(bridge.url) as session:
            await session.list_tools()
            phases["first_list"] = time.perf_counter() - t0
            inner = bridge._session  # the command's own session: the same call without the loopback hop
            assert inner is not None
            for i in range(calls):
                t0 = time.perf_counter()
                await session.call_tool("stamp", {"word": f"w{i}"})
                through.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await inner.call_tool("stamp", {"word": f"w{i}"})
                straight.append(time.perf_counter() - t0)
    finally:
        t0 = time.perf_counter()
        await bridge.stop()
        phases["stop"] = time.perf_counter() - t0
    return {**phases, "call_through": statistics.median(through), "call_straight": statistics.median(straight)}


async def relay_requests(container: str, count: int) -> list[float]:
    """Requests through the relay to an HTTP server in the container, each on a new connection."""
    import httpx

    from prefect_agentenv.run_services.harbor_task_mcp import TaskServerRelay
    from prefect_agentenv.runtime.harbor.environment import exec_in

    await exec_in(container, "cd /opt/task && (python3 -m http.server 8000 --bind 127.0.0.1 > /dev/null 2>&1 &)",
                  user=None, timeout=30)
    relay = TaskServerRelay("files", "http://localhost:8000/marker.txt")
    await relay.serve()
    relay.connect(container)
    times: list[float] = []
    try:
        for _ in range(50):  # the server comes up
            async with httpx.AsyncClient() as http:
                try:
                    if (await http.get(relay.url)).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.2)
        for _ in range(count):
            async with httpx.AsyncClient() as http:
                t0 = time.perf_counter()
                assert (await http.get(relay.url)).status_code == 200
                times.append(time.perf_counter() - t0)
    finally:
        await relay.stop()
    return times


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    image = await ensure_image("mcp-tool", source_of(TASK / "environment", None), build_timeout=300)
    container = await start_environment(image.tag, workdir="/app", env={}, network="none",
                                        run_id=f"bench-{uuid.uuid4().hex[:6]}")
    try:
        with tempfile.TemporaryDirectory(prefix="agentenv-bench-") as folder:
            await one_round(container, Path(folder), 2)  # warm-up
            rows = [await one_round(container, Path(folder), args.calls) for _ in range(args.rounds)]
        relayed = await relay_requests(container, args.calls)
    finally:
        await remove_environment(container)
    result = {key: median_ms([row[key] for row in rows]) for key in rows[0]}
    result["relay_request_new_connection"] = median_ms(relayed)
    result["per_trial"] = round(sum(result[k] for k in ("serve", "connect", "stop")), 1)
    result["rounds"], result["calls"] = args.rounds, args.calls
    RESULTS.write_text(json.dumps({"ms": result}, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
