#!/bin/bash
# The oracle calls the sidecar's tool as an MCP client would, one JSON-RPC message per POST.
python3 - <<'PY'
import json, urllib.request
def post(message):
    request = urllib.request.Request("http://notes:8000/mcp", data=json.dumps(message).encode(),
                                     headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request) as answer:
        return answer.read().decode()
post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "oracle", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"})
print(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "take_note", "arguments": {"text": "shipped"}}}))
PY
