#!/usr/bin/env python
"""The floor for ``task_overhead.py``: the same task against the same servers, in bare asyncio.

One task = start the env → (load its seed ‖ start the agent in a fresh folder, give it the env's
MCP endpoint and its config) → one prompt → check the env's state → stop both. Only ``httpx``
and the standard library: no engine, no Prefect, no report. The A2A prompt uses a blocking
``message/send`` (the servers allow it), readiness polls start at 20 ms.

Usage (the benchmark starts it as a child process, like the CLI)::

    python benchmarks/_bare.py PAIR.json [--runs N] [--concurrency C]

``PAIR.json`` describes the env and agent commands, the seed file, the agent's config, the
prompt and the check (written by ``task_overhead.py``). Exit 0 when every task run passed the
check. Prints one JSON line: ``{"runs": N, "passed": K, "wall_s": ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


async def start(argv: list[str], *, ready_path: str, client: httpx.AsyncClient, cwd: str | None = None,
                env: dict[str, str] | None = None, timeout: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server on a free port; return once ``ready_path`` answers 200."""
    port = free_port()

    def fill(value: str) -> str:
        return value.replace("{host}", HOST).replace("{port}", str(port))

    filled = [fill(a) for a in argv]
    proc = subprocess.Popen(filled, cwd=cwd, env={**os.environ, **{k: fill(v) for k, v in (env or {}).items()}},
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://{HOST}:{port}"
    delay, deadline = 0.02, time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{filled[:4]} exited with {proc.returncode}")
        try:
            if (await client.get(base + ready_path, timeout=2.0)).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        await asyncio.sleep(delay)
        delay = min(delay * 1.6, 0.5)
    stop_now(proc)
    raise RuntimeError(f"{filled[:4]} was not ready in {timeout}s")


async def stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM the group, wait up to ``grace``, then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    stop_now(proc)


def stop_now(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


async def rpc(client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any],
              headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    answer = (await client.post(url, json=body, headers=headers, timeout=120)).json()
    if answer.get("error"):
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


async def one_task(pair: dict[str, Any], client: httpx.AsyncClient) -> bool:
    """One task run; True when the check passed. Everything it started is stopped."""
    procs: list[subprocess.Popen[bytes]] = []
    sandbox = tempfile.mkdtemp(prefix="bare-sandbox-")
    try:
        env_proc, env_base = await start(pair["env_command"], ready_path=pair["env_ready_path"], client=client,
                                         env=pair.get("env_env"))
        procs.append(env_proc)
        card = (await client.get(env_base + pair["env_ready_path"])).json()
        data_url = env_base + card.get("url", "/agentenv")
        mcp_url = env_base + next((i["url"] for i in card.get("additionalInterfaces", []) if i.get("transport") == "mcp"),
                                  "/mcp")

        async def load() -> None:
            seed = Path(pair["seed_file"]).read_bytes()  # as a file part, like load_artifact sends it
            part = {"kind": "file", "file": {"bytes": base64.b64encode(seed).decode(), "name": Path(pair["seed_file"]).name,
                                             "mimeType": "application/json"}}
            await rpc(client, data_url, "data/reset", {})
            await rpc(client, data_url, "data/add", {"parts": [part]})

        async def agent() -> str:
            home = Path(sandbox) / "home"
            home.mkdir()
            proc, base = await start(pair["agent_command"], ready_path=pair["agent_ready_path"], client=client,
                                     cwd=sandbox, env={"HOME": str(home), "AGENTENV_SANDBOX_ROOT": sandbox,
                                                       **pair.get("agent_env", {})})
            procs.append(proc)
            await client.post(base + pair["mcp_config_path"], json={"url": mcp_url, "name": pair["env_name"]})
            if pair.get("agent_config"):
                await client.post(base + pair["agent_config_path"], json=pair["agent_config"])
            return rpc_url(base, (await client.get(base + pair["agent_ready_path"])).json())

        _, agent_rpc = await asyncio.gather(load(), agent())
        message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                   "parts": [{"kind": "text", "text": pair["prompt"]}]}
        await rpc(client, agent_rpc, "message/send", {"message": message, "configuration": {"blocking": True}},
                  headers={"A2A-Version": "0.3"})
        state = await rpc(client, data_url, "data/get", {})
        return check(state, pair["check"])
    finally:
        await asyncio.gather(*(stop(p) for p in procs))
        shutil.rmtree(sandbox, ignore_errors=True)


def rpc_url(base: str, card: dict[str, Any]) -> str:
    """The agent's A2A 0.3 JSON-RPC endpoint, from its card (0.3 ``url``, or a 1.0 card's 0.3 interface)."""
    for interface in card.get("supportedInterfaces") or []:
        if str(interface.get("protocolVersion", "")).startswith("0.3"):
            return urljoin(base + "/", interface["url"])
    return urljoin(base + "/", card.get("url") or "/")


def check(state: dict[str, Any], spec: dict[str, Any]) -> bool:
    """``spec`` = {resource, count}: the env exports exactly ``count`` records of ``resource``."""
    records: list[Any] = []
    for part in state.get("parts", []):
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and isinstance(data.get(spec["resource"]), list):
            records = data[spec["resource"]]
    return len(records) == spec["count"]


async def main_async(pair: dict[str, Any], runs: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    t0 = time.monotonic()
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        async def guarded() -> bool:
            async with gate:
                return await one_task(pair, client)

        results = await asyncio.gather(*(guarded() for _ in range(runs)), return_exceptions=True)
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    return {"runs": runs, "passed": sum(1 for r in results if r is True), "wall_s": round(time.monotonic() - t0, 3),
            "errors": errors[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pair", type=Path)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    out = asyncio.run(main_async(json.loads(args.pair.read_text()), args.runs, args.concurrency))
    print(json.dumps(out))
    sys.exit(0 if out["passed"] == out["runs"] else 1)


if __name__ == "__main__":
    main()
