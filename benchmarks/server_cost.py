#!/usr/bin/env python
"""What each kind of record costs the Prefect server in CPU: per endpoint, and per Prefect object.

Starts a real ``prefect server start`` (SQLite) on a free loopback port, as ``task_overhead.py``
does, and runs one child process per kind, N items each, round by round; the server's CPU
(``/proc``, waiting for it to go idle before and after) is measured around each child.

* ``--level api``: raw HTTP calls of one endpoint against one flow run (what a benchmark task run
  sends: its subflow's parent task run, the flow run, its states, the engine's ``PATCH`` and read,
  artifacts, the progress ``PATCH``, a log batch). Kinds that need runs to act on create them first;
  subtract the kind that creates them (``flow_run_create`` for the states, ``patch_flow_run`` and
  ``get_flow_run``; ``flow_run_running`` for ``flow_run_completed``; ``progress_create`` for
  ``patch_artifact``).
* ``--level prefect``: Prefect's own client inside a flow: empty subflows, task runs (three state
  events each), keyed markdown artifacts, custom events, log lines flushed one batch each.

    python benchmarks/server_cost.py --level api --n 40 --reps 3
    python benchmarks/server_cost.py --level prefect --n 40 --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_overhead import PY, PrefectServer  # noqa: E402

API_KINDS = ["none", "task_run", "flow_run_create", "flow_run_running", "flow_run_completed", "patch_flow_run",
             "get_flow_run", "artifact_markdown", "artifact_table", "progress_create", "patch_artifact", "logs"]
PREFECT_KINDS = ["none", "subflows", "taskruns", "artifacts", "events", "logs"]

API_CHILD = r'''
import datetime, json, sys, time, uuid, httpx
url, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
class Retrying(httpx.Client):
    """A SQLite server answers 503 when a write meets another: ask again, as Prefect's client does."""
    def request(self, *args, **kwargs):
        for _ in range(20):
            r = super().request(*args, **kwargs)
            if r.status_code != 503:
                return r
            time.sleep(0.05)
        return r
c = Retrying(base_url=url, timeout=60)
flow_id = c.post("/flows/", json={"name": "server-cost"}).json()["id"]
parent = c.post("/flow_runs/", json={"flow_id": flow_id, "name": "parent", "state": {"type": "RUNNING"}}).json()["id"]
runs = []
if kind in ("flow_run_running", "flow_run_completed", "patch_flow_run", "get_flow_run"):
    for i in range(n):
        runs.append(c.post("/flow_runs/", json={"flow_id": flow_id, "name": f"s{i}", "state": {"type": "PENDING"},
                                                "tags": ["a", "b"]}).json()["id"])
        if kind == "flow_run_completed":
            c.post(f"/flow_runs/{runs[-1]}/set_state", json={"state": {"type": "RUNNING"}})
if kind == "patch_artifact":
    runs = [c.post("/artifacts/", json={"type": "progress", "data": 1.0, "flow_run_id": parent}).json()["id"]
            for _ in range(n)]
now = lambda: datetime.datetime.now(datetime.timezone.utc).isoformat()
for i in range(n if kind != "none" else 0):
    if kind == "task_run":
        r = c.post("/task_runs/", json={"flow_run_id": parent, "task_key": "agent-task", "dynamic_key": uuid.uuid4().hex,
                                        "name": f"t{i}", "state": {"type": "PENDING"}, "task_inputs": {"task": []}})
    elif kind == "flow_run_create":
        r = c.post("/flow_runs/", json={"flow_id": flow_id, "name": f"s{i}", "state": {"type": "PENDING"},
                                        "tags": ["a", "b"]})
    elif kind == "flow_run_running":
        r = c.post(f"/flow_runs/{runs[i]}/set_state", json={"state": {"type": "RUNNING"}})
    elif kind == "flow_run_completed":
        r = c.post(f"/flow_runs/{runs[i]}/set_state", json={"state": {"type": "COMPLETED"}})
    elif kind == "patch_flow_run":
        r = c.patch(f"/flow_runs/{runs[i]}", json={"flow_version": "v", "empirical_policy": {"retries": 0, "retry_delay": 0}})
    elif kind == "get_flow_run":
        r = c.get(f"/flow_runs/{runs[i]}")
    elif kind == "artifact_markdown":
        r = c.post("/artifacts/", json={"type": "markdown", "key": f"k-{i % 4}", "data": "# x\n" + "y" * 2000,
                                        "flow_run_id": parent})
    elif kind == "artifact_table":
        r = c.post("/artifacts/", json={"type": "table", "key": f"t-{i % 4}", "flow_run_id": parent,
                                        "data": json.dumps([{"a": j, "b": "x" * 20} for j in range(6)])})
    elif kind == "progress_create":
        r = c.post("/artifacts/", json={"type": "progress", "data": 1.0, "flow_run_id": parent})
    elif kind == "patch_artifact":
        r = c.patch(f"/artifacts/{runs[i]}", json={"data": 50.0})
    elif kind == "logs":
        r = c.post("/logs/", json=[{"name": "x", "level": 20, "message": "m" * 100, "timestamp": now(),
                                    "flow_run_id": parent}] * 6)
    assert r.status_code < 300, (kind, r.status_code, r.text[:300])
'''

PREFECT_CHILD = r'''
import asyncio, sys, time, json
from prefect import flow, task, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.events import emit_event
from prefect.logging.handlers import APILogHandler
kind, n = sys.argv[2], int(sys.argv[3])

@task(cache_policy=NO_CACHE, persist_result=False)
async def step(i: int) -> int:
    return i

@flow(persist_result=False)
async def sub(i: int) -> int:
    return i

@flow(persist_result=False)
async def main() -> float:
    t0 = time.process_time()
    for i in range(n if kind != "none" else 0):
        if kind == "subflows":
            await sub(i)
        elif kind == "taskruns":
            await step(i)
        elif kind == "artifacts":
            await acreate_markdown_artifact(markdown="# x\n" + "y" * 2000, key=f"k-{i % 4}")
        elif kind == "events":
            emit_event(event="server-cost.event", resource={"prefect.resource.id": "server-cost"}, payload={"i": i})
        elif kind == "logs":
            get_run_logger().info("line %d %s", i, "y" * 100)
            await APILogHandler.aflush()
    return time.process_time() - t0

print(json.dumps({"client_cpu_s": asyncio.run(main())}))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("api", "prefect"), default="api")
    parser.add_argument("--kinds", help="comma-separated subset (default: all of the level's kinds)")
    parser.add_argument("--n", type=int, default=40, help="items per child (default 40)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kinds = args.kinds.split(",") if args.kinds else (API_KINDS if args.level == "api" else PREFECT_KINDS)
    code = API_CHILD if args.level == "api" else PREFECT_CHILD
    tmp = Path(tempfile.mkdtemp(prefix="server-cost-"))
    server = PrefectServer(tmp / "server-prefect")
    print(f"prefect server on {server.url}: healthy after {server.start():.1f} s; load {os.getloadavg()}", flush=True)
    env = {**os.environ, "PREFECT_API_URL": server.url, "PREFECT_HOME": str(tmp / "client-prefect"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    cpu: dict[str, list[float]] = {}
    try:
        for rnd in range(args.reps):
            for kind in kinds:
                server.settle()
                before = server.cpu_s()
                out = subprocess.run([PY, "-c", code, server.url, kind, str(args.n)], env=env, capture_output=True,
                                     text=True)
                server.settle()
                if out.returncode:
                    raise SystemExit(f"{kind}: {out.stderr[-1500:]}")
                cpu.setdefault(kind, []).append(server.cpu_s() - before)
                print(f"  round {rnd}: {kind:<20} server CPU {cpu[kind][-1]:6.2f} s  {out.stdout.strip()[-60:]}",
                      flush=True)
    finally:
        server.stop()
    medians = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"\nserver CPU per child, median of {args.reps} ({args.n} items each; subtract the setup kinds, docstring)")
    print("| kind | server CPU (min–max) | less `none`, per item |")
    print("|---|---|---|")
    for kind in kinds:
        per = (medians[kind] - medians.get("none", 0.0)) / args.n * 1000
        print(f"| {kind} | {medians[kind]:.2f} s ({min(cpu[kind]):.2f}–{max(cpu[kind]):.2f}) | {per:.1f} ms |")
    if args.json:
        args.json.write_text(json.dumps({"level": args.level, "n": args.n, "cpu_s": cpu, "median_s": medians,
                                         "load": os.getloadavg()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
