#!/usr/bin/env python
"""What the model gateway adds to a model call: the same requests straight to the upstream and
through the gateway, interleaved call by call in one run.

Three processes: the mock model (the upstream, ``python -m prefect_agentenv.agents.mock_model``),
the gateway (``_gateway.py``: ``serve_gateway`` in a process of its own, every wire to the mock)
and this client, which sends each request kind ``--calls`` times down each path, alternating, on
one keep-alive ``httpx.AsyncClient`` per path:

* ``chat``        -- a whole chat completion;
* ``chat-stream`` -- a streamed chat completion with ``include_usage`` (its time to the first chunk too);
* ``messages-stream`` -- a streamed Anthropic message (``x-api-key``), time to the first chunk too.

Reported per kind and path: p50 and p90 of the whole call and of the time to the first body chunk
(the mock writes a stream at once, so that is the time to the first token as a client sees it),
and the differences gateway − direct. The gateway's CPU per 1,000 calls is the user + system time
of its process (``resource.getrusage(RUSAGE_SELF)``, read by the helper before and after the
measured calls) divided by the calls it relayed: its event loop, uvicorn, the relay and httpx.

Usage::

    python benchmarks/gateway_latency.py [--calls 500] [--warmup 50] [--json benchmarks/results/gateway_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from prefect_agentenv.runtime.launch.ports import free_port

HERE = Path(__file__).parent
PROMPT = "Summarise the plot of a long novel about a whale, in the words of the ship's cook, at length."
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": PROMPT}]}),
    "chat-stream": ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": PROMPT}],
                                          "stream": True, "stream_options": {"include_usage": True}}),
    "messages-stream": ("/messages", {"model": "m", "max_tokens": 500, "stream": True,
                                      "messages": [{"role": "user", "content": PROMPT}]}),
}


@dataclass
class Samples:
    total: list[float] = field(default_factory=list)
    first_chunk: list[float] = field(default_factory=list)


def _start_mock() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    mock = subprocess.Popen([sys.executable, "-m", "prefect_agentenv.agents.mock_model", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            if httpx.get(base + "/health", timeout=1.0).status_code == 200:
                return mock, base
        except httpx.TransportError:
            time.sleep(0.05)
    mock.kill()
    raise SystemExit("the mock model did not start")


def _start_gateway(upstream: str) -> tuple[subprocess.Popen[str], str, str]:
    gateway = subprocess.Popen([sys.executable, str(HERE / "_gateway.py"), upstream], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert gateway.stdout is not None
    ready = json.loads(gateway.stdout.readline())
    return gateway, ready["base_url"], ready["token"]


def _gateway_cpu(gateway: subprocess.Popen[str]) -> tuple[float, int]:
    assert gateway.stdin is not None and gateway.stdout is not None
    gateway.stdin.write("cpu\n")
    gateway.stdin.flush()
    answer = json.loads(gateway.stdout.readline())
    return answer["cpu_seconds"], answer["calls"]


async def _call(http: httpx.AsyncClient, url: str, body: dict[str, Any], key: str) -> tuple[float, float]:
    """One call: (seconds to the whole answer, seconds to its first body chunk)."""
    started = time.perf_counter()
    first = 0.0
    size = 0
    async with http.stream("POST", url, json=body, headers={"authorization": f"Bearer {key}"}) as answer:
        async for chunk in answer.aiter_raw():
            if not first:
                first = time.perf_counter() - started
            size += len(chunk)
        if answer.status_code != 200 or not size:
            raise SystemExit(f"{url} answered {answer.status_code}")
    return time.perf_counter() - started, first


async def _measure(paths: dict[str, str], key: str, calls: int, warmup: int,
                   cpu: Any) -> tuple[dict[str, dict[str, Samples]], float, int]:
    results = {kind: {path: Samples() for path in paths} for kind in KINDS}
    async with httpx.AsyncClient(timeout=30.0) as direct, httpx.AsyncClient(timeout=30.0) as through:
        clients = {"direct": direct, "gateway": through}
        for suffix, body in KINDS.values():
            for _ in range(warmup):
                for path, base in paths.items():
                    await _call(clients[path], base + suffix, body, key)
        cpu_before, calls_before = cpu()
        for kind, (suffix, body) in KINDS.items():
            for i in range(calls):
                order = list(paths.items()) if i % 2 == 0 else list(reversed(paths.items()))
                for path, base in order:
                    total, first = await _call(clients[path], base + suffix, body, key)
                    results[kind][path].total.append(total)
                    results[kind][path].first_chunk.append(first)
        cpu_after, calls_after = cpu()
    return results, cpu_after - cpu_before, calls_after - calls_before


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000


def _summary(results: dict[str, dict[str, Samples]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for kind, paths in results.items():
        row = {path: {"p50_ms": _pct(s.total, 50), "p90_ms": _pct(s.total, 90),
                      "first_chunk_p50_ms": _pct(s.first_chunk, 50), "first_chunk_p90_ms": _pct(s.first_chunk, 90)}
               for path, s in paths.items()}
        row["added"] = {key: row["gateway"][key] - row["direct"][key] for key in row["direct"]}
        table[kind] = row
    return table


def _print(table: dict[str, Any], cpu_per_1000: float) -> None:
    print(f"{'kind':<16} {'path':<8} {'p50 ms':>8} {'p90 ms':>8} {'1st p50':>8} {'1st p90':>8}")
    for kind, row in table.items():
        for path in ("direct", "gateway", "added"):
            r = row[path]
            print(f"{kind:<16} {path:<8} {r['p50_ms']:8.2f} {r['p90_ms']:8.2f} "
                  f"{r['first_chunk_p50_ms']:8.2f} {r['first_chunk_p90_ms']:8.2f}")
    print(f"gateway CPU per 1,000 calls: {cpu_per_1000:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500, help="measured calls per kind and path")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls per kind and path first")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    mock, upstream = _start_mock()
    gateway = None
    try:
        gateway, base, token = _start_gateway(upstream + "/v1")
        paths = {"direct": upstream + "/v1", "gateway": base + "/v1"}
        load = os.getloadavg()
        results, cpu, relayed = asyncio.run(_measure(paths, token, args.calls, args.warmup,
                                                     lambda: _gateway_cpu(gateway)))  # type: ignore[arg-type]
        table = _summary(results)
        cpu_per_1000 = cpu / relayed * 1000
        _print(table, cpu_per_1000)
        print(f"load before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}; {relayed} calls relayed")
        if args.json:
            args.json.write_text(json.dumps({
                "calls": args.calls, "warmup": args.warmup, "table": table, "gateway_cpu_per_1000_calls_s": cpu_per_1000,
                "load_before": load, "load_after": os.getloadavg(), "python": platform.python_version(),
                "cpus": os.cpu_count()}, indent=2) + "\n")
    finally:
        for process in (gateway, mock):
            if process is not None:
                if process.stdin:
                    process.stdin.close()
                process.terminate()
                process.wait(timeout=10)


if __name__ == "__main__":
    main()
