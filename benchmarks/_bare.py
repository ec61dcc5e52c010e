#!/usr/bin/env python
"""The floor for ``task_overhead.py``: the same task against the same servers, in bare asyncio.

One task = start the env → (load its seed ‖ start the agent in a fresh folder, give it the env's
MCP endpoint and its config) → one prompt → check the env's state (and, when the pair names an
``outcome_script``, run that verify script against the env's MCP endpoint in a process of its own,
as an ``env_outcome_verifier`` step does) → stop both. Only ``httpx`` and the standard library: no
engine, no Prefect, no report. The A2A prompt uses a blocking ``message/send`` (the servers allow
it), readiness polls start at 20 ms.

Usage (the benchmark starts it as a child process, like the CLI)::

    python benchmarks/_bare.py PAIR.json [--runs N] [--concurrency C] [--pool]

With ``--pool`` the env and agent processes are started once per concurrent slot and reused: each
task run resets and reloads the env, empties the agent's folder, configures it again and prompts
it in a new context (the floor for the engine's warm pools).

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
from dataclasses import dataclass, field
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


@dataclass
class Slot:
    """One env and one agent, with where to reach them."""

    sandbox: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    data_url: str = ""
    mcp_url: str = ""
    agent_base: str = ""
    agent_rpc: str = ""


async def start_env(pair: dict[str, Any], client: httpx.AsyncClient, slot: Slot) -> None:
    proc, base = await start(pair["env_command"], ready_path=pair["env_ready_path"], client=client,
                             env=pair.get("env_env"))
    slot.procs.append(proc)
    card = (await client.get(base + pair["env_ready_path"])).json()
    slot.data_url = base + card.get("url", "/agentenv")
    slot.mcp_url = base + next((i["url"] for i in card.get("additionalInterfaces", []) if i.get("transport") == "mcp"),
                               "/mcp")


async def start_agent(pair: dict[str, Any], client: httpx.AsyncClient, slot: Slot) -> None:
    home = Path(slot.sandbox) / "home"
    home.mkdir(exist_ok=True)
    proc, slot.agent_base = await start(pair["agent_command"], ready_path=pair["agent_ready_path"], client=client,
                                        cwd=slot.sandbox, env={"HOME": str(home), "AGENTENV_SANDBOX_ROOT": slot.sandbox,
                                                               **pair.get("agent_env", {})})
    slot.procs.append(proc)
    slot.agent_rpc = rpc_url(slot.agent_base, (await client.get(slot.agent_base + pair["agent_ready_path"])).json())


async def load(pair: dict[str, Any], client: httpx.AsyncClient, slot: Slot) -> None:
    seed = Path(pair["seed_file"]).read_bytes()  # as a file part, like load_artifact sends it
    part = {"kind": "file", "file": {"bytes": base64.b64encode(seed).decode(), "name": Path(pair["seed_file"]).name,
                                     "mimeType": "application/json"}}
    await rpc(client, slot.data_url, "data/reset", {})
    await rpc(client, slot.data_url, "data/add", {"parts": [part]})


async def configure(pair: dict[str, Any], client: httpx.AsyncClient, slot: Slot) -> None:
    await client.post(slot.agent_base + pair["mcp_config_path"], json={"url": slot.mcp_url, "name": pair["env_name"]})
    if pair.get("agent_config"):
        await client.post(slot.agent_base + pair["agent_config_path"], json=pair["agent_config"])


async def prompt_and_check(pair: dict[str, Any], client: httpx.AsyncClient, slot: Slot) -> bool:
    message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
               "parts": [{"kind": "text", "text": pair["prompt"]}]}
    await rpc(client, slot.agent_rpc, "message/send", {"message": message, "configuration": {"blocking": True}},
              headers={"A2A-Version": "0.3"})

    async def state() -> bool:
        return check(await rpc(client, slot.data_url, "data/get", {}), pair["check"])

    if not pair.get("outcome_script"):
        return await state()
    return all(await asyncio.gather(state(), run_outcome_script(pair, slot)))


OUTCOME_RUNNER = ("import asyncio, json, runpy, sys; verify = runpy.run_path(sys.argv[1])['verify']; "
                  "print(json.dumps(asyncio.run(verify(sys.argv[2]))))")
"""The least an outcome check's process does: load the script, await ``verify(mcp_url)``, print its rows."""


async def run_outcome_script(pair: dict[str, Any], slot: Slot) -> bool:
    """The pair's verify script in its own process (``-P``: its folder off sys.path); True when every row passed."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-P", "-c", OUTCOME_RUNNER, pair["outcome_script"],
                                                slot.mcp_url, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL, cwd=slot.sandbox)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        return False
    rows = json.loads(out.decode().strip().splitlines()[-1])
    return bool(rows) and all(row.get("result") for row in rows)


async def stop_slot(slot: Slot) -> None:
    await asyncio.gather(*(stop(p) for p in slot.procs))
    shutil.rmtree(slot.sandbox, ignore_errors=True)


async def one_task(pair: dict[str, Any], client: httpx.AsyncClient) -> bool:
    """One task run; True when the check passed. Everything it started is stopped."""
    slot = Slot(tempfile.mkdtemp(prefix="bare-sandbox-"))
    try:
        await start_env(pair, client, slot)

        async def agent() -> None:
            await start_agent(pair, client, slot)
            await configure(pair, client, slot)

        await asyncio.gather(load(pair, client, slot), agent())
        return await prompt_and_check(pair, client, slot)
    finally:
        await stop_slot(slot)


async def pooled_task(pair: dict[str, Any], client: httpx.AsyncClient, idle: list[Slot], everything: list[Slot]) -> bool:
    """One task run on a warm env + agent (started on first need): reset and reload the env, empty
    the sandbox, configure the agent again, prompt in a new context, check."""
    if idle:
        slot = idle.pop()
        for child in Path(slot.sandbox).iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        slot = Slot(tempfile.mkdtemp(prefix="bare-sandbox-"))
        everything.append(slot)
        await start_env(pair, client, slot)
        await start_agent(pair, client, slot)
    try:
        await asyncio.gather(load(pair, client, slot), configure(pair, client, slot))
        return await prompt_and_check(pair, client, slot)
    finally:
        idle.append(slot)


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


async def main_async(pair: dict[str, Any], runs: int, concurrency: int, pool: bool = False) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    idle: list[Slot] = []
    everything: list[Slot] = []
    t0 = time.monotonic()
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        async def guarded() -> bool:
            async with gate:
                return await (pooled_task(pair, client, idle, everything) if pool else one_task(pair, client))

        try:
            results = await asyncio.gather(*(guarded() for _ in range(runs)), return_exceptions=True)
        finally:
            await asyncio.gather(*(stop_slot(s) for s in everything))
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    return {"runs": runs, "passed": sum(1 for r in results if r is True), "wall_s": round(time.monotonic() - t0, 3),
            "errors": errors[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pair", type=Path)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--pool", action="store_true", help="keep env and agent processes across task runs")
    args = parser.parse_args()
    out = asyncio.run(main_async(json.loads(args.pair.read_text()), args.runs, args.concurrency, args.pool))
    print(json.dumps(out))
    sys.exit(0 if out["passed"] == out["runs"] else 1)


if __name__ == "__main__":
    main()
