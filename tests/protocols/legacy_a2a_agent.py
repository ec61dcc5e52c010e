"""A hand-written A2A 0.3 agent that answers like AgentEnv agents do, and nothing more.

It stays for the tests that need failures, hangs and a log on demand; the genuine AgentEnv SDK
agent (``tests/peers/sdk_agent.py``) runs in ``tests/conformance/``.

* The card is served only at ``/.well-known/agent.json`` (``agent-card.json`` is 404), with
  ``protocolVersion: 0.3.0`` and a *relative* ``url`` (``/a2a``); it declares the agent-config
  extension the AgentEnv way (``methods.set.request.supported``) and a task-only trajectory.
* ``POST /a2a`` speaks only 0.3 JSON-RPC: ``message/send``, ``tasks/get``, ``tasks/cancel``.
  A non-blocking send answers a ``working`` task that completes shortly after; the reply is in
  ``status.message.parts``: a text part, then a data part with ``usage.tool_call_count`` and a
  trajectory location — or ``error_type/error_code/error_message`` when it fails.
* What the prompt says decides the behaviour: ``fail`` fails the task, ``sleep N`` works for N
  seconds, ``sync`` ignores ``blocking: false`` and answers the finished task at once; anything
  else is echoed.
* ``POST /ext/agent-config`` refuses unknown fields (400), as strict AgentEnv agents do.
  ``GET /_log`` lists the JSON-RPC methods and extension calls received.

Run: ``python legacy_a2a_agent.py --host 127.0.0.1 --port N``.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

SUPPORTED_CONFIG = ["model", "system_prompt"]
WORK_SECONDS = 0.2

CARD = {
    "name": "legacy-echo",
    "description": "An AgentEnv-style A2A 0.3 agent",
    "protocolVersion": "0.3.0",
    "url": "/a2a",
    "preferredTransport": "JSONRPC",
    "version": "0.1.0",
    "capabilities": {"streaming": False, "extensions": [
        {"uri": "urn:agentenv:agent-config/v1",
         "params": {"endpoint": "/ext/agent-config", "methods": {"set": {"request": {"supported": SUPPORTED_CONFIG}}}}},
        {"uri": "urn:agentenv:trajectory/v1",
         "params": {"endpoint": "/ext/trajectory", "methods": {"get": {"request": {"required": ["task_id"]}}}}},
    ]},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "echo", "name": "echo", "description": "Echoes", "tags": []}],
}

tasks: dict[str, dict[str, Any]] = {}
workers: dict[str, asyncio.Task[None]] = {}
log: list[str] = []


def _message(text: str, data: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "message", "messageId": uuid.uuid4().hex, "role": "agent", "taskId": task["id"],
            "contextId": task["contextId"], "parts": [{"kind": "text", "text": text}, {"kind": "data", "data": data}]}


def _finish(task: dict[str, Any], prompt: str) -> None:
    if prompt.startswith("fail"):
        data = {"error_type": "model_error", "error_code": "E_MODEL", "error_message": "the model refused"}
        task["status"] = {"state": "failed", "message": _message("I could not do it.", data, task)}
    else:
        data = {"usage": {"tool_call_count": 3, "input_tokens": 12},
                "trajectory": f"s3://trajectories/{task['id']}.json"}
        task["status"] = {"state": "completed", "message": _message(f"echo: {prompt}", data, task)}


async def _work(task: dict[str, Any], prompt: str) -> None:
    seconds = float(prompt.split()[1]) if prompt.startswith("sleep") else WORK_SECONDS
    await asyncio.sleep(seconds)
    _finish(task, prompt)


def _send(params: dict[str, Any]) -> dict[str, Any]:
    message = params["message"]
    prompt = " ".join(p.get("text", "") for p in message.get("parts", []) if p.get("kind") == "text")
    task = {"kind": "task", "id": uuid.uuid4().hex, "contextId": message.get("contextId") or uuid.uuid4().hex,
            "status": {"state": "working"}, "history": [message]}
    tasks[task["id"]] = task
    blocking = (params.get("configuration") or {}).get("blocking", True)
    if blocking or prompt.startswith("sync"):
        _finish(task, prompt)
    else:
        workers[task["id"]] = asyncio.get_running_loop().create_task(_work(task, prompt))
    return task


def _cancel(params: dict[str, Any]) -> dict[str, Any]:
    task = tasks[params["id"]]
    worker = workers.pop(task["id"], None)
    if worker is not None:
        worker.cancel()
    if task["status"]["state"] not in ("completed", "failed", "canceled"):
        task["status"] = {"state": "canceled"}
    return task


async def rpc(request: Request) -> Response:
    body = await request.json()
    method, params, rid = body.get("method"), body.get("params") or {}, body.get("id")
    log.append(method)
    try:
        if method == "message/send":
            result = _send(params)
        elif method == "tasks/get":
            result = tasks[params["id"]]
        elif method == "tasks/cancel":
            result = _cancel(params)
        else:
            return JSONResponse({"jsonrpc": "2.0", "id": rid,
                                 "error": {"code": -32601, "message": f"Method not found: {method}"}})
    except KeyError:
        return JSONResponse({"jsonrpc": "2.0", "id": rid, "error": {"code": -32001, "message": "Task not found"}})
    return JSONResponse({"jsonrpc": "2.0", "id": rid, "result": result})


async def agent_config(request: Request) -> Response:
    body = await request.json()
    log.append("agent-config")
    unknown = sorted(set(body) - set(SUPPORTED_CONFIG))
    if unknown:
        return JSONResponse({"detail": f"extra fields not permitted: {unknown}"}, status_code=400)
    return JSONResponse({"ok": True})


async def card(request: Request) -> Response:
    return JSONResponse(CARD)


async def read_log(request: Request) -> Response:
    return JSONResponse(log)


app = Starlette(routes=[
    Route("/.well-known/agent.json", card),
    Route("/a2a", rpc, methods=["POST"]),
    Route("/ext/agent-config", agent_config, methods=["POST"]),
    Route("/_log", read_log),
])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
