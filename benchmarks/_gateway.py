#!/usr/bin/env python
"""Helper of ``gateway_latency.py``: the model gateway in a process of its own, so its CPU is its own.

Started with the upstream's base URL (``.../v1``, every wire); prints one JSON line
``{"base_url", "token"}`` once it listens, then answers each ``cpu`` line on stdin with
``{"cpu_seconds"}`` (user + system time of this process, ``resource.getrusage``); stops at EOF.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys

from pydantic import SecretStr

from prefect_agentenv.gateway import GatewayConfig, Upstream, serve_gateway

KEY = SecretStr("sk-benchmark-not-a-real-key")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(upstream: str) -> None:
    config = GatewayConfig(chat=Upstream(base_url=upstream, api_key=KEY),
                           responses=Upstream(base_url=upstream, api_key=KEY),
                           messages=Upstream(base_url=upstream, auth="x-api-key", api_key=KEY))
    async with serve_gateway(config) as gateway:
        print(json.dumps({"base_url": gateway.base_url, "token": gateway.issue("bench", "agent")}), flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            if line.strip() == "cpu":
                print(json.dumps({"cpu_seconds": _cpu_seconds(), "calls": len(gateway.calls("bench"))}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
