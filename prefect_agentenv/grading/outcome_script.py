"""Runs an env outcome verify script in its own process: ``python -P outcome_script.py SCRIPT MCP_URL [RUN_JSON]``.

Standard library only: it runs by path under the Python the task names, where this package is not installed.

The script defines ``async def verify(mcp_url)`` or ``async def verify(mcp_url, run)`` and
returns rows (a list of dicts with at least ``id`` and ``result``). The rows are printed as one
JSON line after a marker, so anything the script prints itself cannot be mistaken for them.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import runpy
import sys
from typing import Any

MARKER = "__AGENTENV_VERIFY_ROWS__"


async def _call(verify: Any, mcp_url: str, run: Any) -> Any:
    params = inspect.signature(verify).parameters
    result = verify(mcp_url, run) if len(params) >= 2 else verify(mcp_url)
    return await result if inspect.isawaitable(result) else result


def main(argv: list[str]) -> int:
    script, mcp_url = argv[0], argv[1]
    run = json.loads(open(argv[2], encoding="utf-8").read()) if len(argv) > 2 else None
    namespace = runpy.run_path(script, run_name="agentenv_verify")
    verify = namespace.get("verify")
    if not callable(verify):
        print(f"{script} does not define verify(mcp_url[, run])", file=sys.stderr)
        return 3
    rows = asyncio.run(_call(verify, mcp_url, run))
    print(MARKER + json.dumps(rows, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
