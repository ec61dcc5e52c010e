"""The task's own MCP server, over stdio: one tool, ``stamp``, which writes /app/stamp.txt.

It uses only the standard library (the image has no MCP package): newline-delimited JSON-RPC 2.0, the
``initialize`` handshake, ``tools/list`` and ``tools/call``. What it writes holds a line of a file only the
image has, so the verifier can tell the tool ran in the environment.
"""

import json
import sys

TOOL = {"name": "stamp", "description": "Stamp a word: writes it, with the environment's marker, to /app/stamp.txt.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}


def stamp(word: str) -> str:
    with open("/opt/task/marker.txt", encoding="utf-8") as marker:
        line = f"{word}: {marker.read().strip()}"
    with open("/app/stamp.txt", "w", encoding="utf-8") as out:
        out.write(line + "\n")
    return f"stamped {line}"


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:  # a notification (notifications/initialized): no answer
        return None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stamper", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call" and params.get("name") == "stamp":
        text = stamp(str((params.get("arguments") or {}).get("word", "")))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


for raw in sys.stdin:
    if raw.strip():
        reply = answer(json.loads(raw))
        if reply is not None:
            print(json.dumps(reply), flush=True)
