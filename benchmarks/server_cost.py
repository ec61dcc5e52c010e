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
* ``--level recorded``: what a benchmark records per task run (a subflow, five step task runs, log
  lines, four keyed artifacts), on one server per ``--configs`` configuration side by side, and
  what the UI reads back for it under each.

    python benchmarks/server_cost.py --level prefect --n 40 --reps 3
    python benchmarks/server_cost.py --level recorded --n 15 --reps 3 --idle 10 --drain 6 --configs default,all
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_overhead import PY, PrefectServer  # noqa: E402

API_KINDS = ["none", "task_run", "flow_run_create", "flow_run_running", "flow_run_completed", "patch_flow_run",
             "get_flow_run", "artifact_markdown", "artifact_table", "progress_create", "patch_artifact", "logs"]
PREFECT_KINDS = ["none", "subflows", "taskruns", "artifacts", "events", "logs"]
RECORDED_KINDS = ["none", "recorded"]

S = "PREFECT_SERVER_SERVICES_"
LOOPS = {f"{S}LATE_RUNS_LOOP_SECONDS": "60", f"{S}FOREMAN_LOOP_SECONDS": "60", f"{S}REPOSSESSOR_LOOP_SECONDS": "60",
         f"{S}PAUSE_EXPIRATIONS_LOOP_SECONDS": "60", f"{S}CANCELLATION_CLEANUP_LOOP_SECONDS": "120",
         f"{S}CLEANUP_RECONCILER_LOOP_SECONDS": "60", f"{S}SCHEDULER_LOOP_SECONDS": "300"}
CONFIGS: dict[str, dict[str, str]] = {
    "default": {},
    "no-triggers": {f"{S}TRIGGERS_ENABLED": "false"},
    "recorder-batch": {f"{S}TASK_RUN_RECORDER_BATCH_SIZE": "100", f"{S}TASK_RUN_RECORDER_FLUSH_INTERVAL": "2"},
    "persister-batch": {f"{S}EVENT_PERSISTER_BATCH_SIZE": "200", f"{S}EVENT_PERSISTER_READ_BATCH_SIZE": "10"},
    "no-stream-out": {"PREFECT_SERVER_EVENTS_STREAM_OUT_ENABLED": "false"},
    "slow-loops": LOOPS,
}
"""Server configurations to compare (``--configs``): each a set of the server's settings over Prefect's defaults."""

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
async def recorded(i: int) -> int:
    """What a benchmark records per task run: a subflow, a task run per step, four artifacts, a few log lines."""
    from prefect.artifacts import acreate_table_artifact
    for s in range(5):
        await step(s)
    for line in range(3):
        get_run_logger().info("step %d done %s", line, "y" * 80)
    for key in ("summary", "steps", "transcript"):
        await acreate_markdown_artifact(markdown="# x\n" + "y" * 2000, key=f"{key}-{i % 4}")
    await acreate_table_artifact(table=[{"a": j, "b": "x" * 20} for j in range(6)], key=f"verifications-{i % 4}")
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
        elif kind == "recorded":
            await recorded(i)
    from prefect.runtime import flow_run
    print(json.dumps({"flow_run_id": flow_run.id}))
    return time.process_time() - t0

print(json.dumps({"client_cpu_s": asyncio.run(main())}))
'''


def parse_configs(names: str, custom: list[str]) -> dict[str, dict[str, str]]:
    """The named presets plus ``NAME:KEY=VALUE,KEY=VALUE`` ones; ``all`` merges every preset but ``default``."""
    configs: dict[str, dict[str, str]] = {}
    for name in names.split(","):
        if name == "all":
            configs["all"] = {k: v for c in CONFIGS.values() for k, v in c.items()}
        elif name in CONFIGS:
            configs[name] = CONFIGS[name]
        else:
            raise SystemExit(f"unknown config {name!r}: choose from {sorted(CONFIGS)} or all, or use --config")
    for item in custom:
        name, _, pairs = item.partition(":")
        configs[name] = dict(pair.split("=", 1) for pair in pairs.split(",") if pair)
    return configs


def post(url: str, path: str, body: dict[str, object]) -> object:
    import httpx

    r = httpx.post(url + path, json=body, timeout=60)
    r.raise_for_status()
    return r.json()


def wait_recorded(url: str, parent: str, expected: int, limit_s: float = 120.0) -> int:
    """Wait until the server's recorder has written every step task run of the child's subflows as Completed."""
    body = {"flow_runs": {"parent_flow_run_id": {"any_": [parent]}},
            "task_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}}
    t0, count = time.monotonic(), 0
    while time.monotonic() - t0 < limit_s:
        count = int(post(url, "/task_runs/count", body))  # type: ignore[call-overload]
        if count >= expected:
            break
        time.sleep(0.25)
    return count


def ui_reads(url: str, parent: str) -> dict[str, int]:
    """What the UI reads for a benchmark's flow run: its subflows, and one subflow's task runs (and one's state
    history), graph, logs, artifacts and events."""
    import httpx

    subs = post(url, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [parent]}}})
    sub = subs[0]["id"]  # type: ignore[index]
    runs = {"flow_runs": {"id": {"any_": [sub]}}}
    tasks = post(url, "/task_runs/filter", runs)
    graph = httpx.get(f"{url}/flow_runs/{sub}/graph-v2", timeout=60).json()
    states = httpx.get(f"{url}/task_run_states/", params={"task_run_id": tasks[0]["id"]}, timeout=60).json()  # type: ignore
    events = post(url, "/events/filter", {"filter": {"any_resource": {"id": [f"prefect.flow-run.{sub}"]}}, "limit": 50})
    return {"subflows": len(subs), "task_runs_completed": sum(t["state_type"] == "COMPLETED" for t in tasks),  # type: ignore
            "states_of_one": len(states), "graph_nodes": len(graph["nodes"]),
            "logs": len(post(url, "/logs/filter", {"logs": {"flow_run_id": {"any_": [sub]}}})),  # type: ignore
            "artifacts": len(post(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [sub]}}})),  # type: ignore
            "events": events["total"]}  # type: ignore[index]


def run_child(server: PrefectServer, code: str, kind: str, n: int, env: dict[str, str], drain_s: float,
              idle: float) -> tuple[float, float, dict[str, object]]:
    """One child of ``kind`` against ``server``: its server CPU, that CPU less the server's idling over the same
    wall time (``idle`` cores), and what the child printed."""
    server.settle()
    before, t0 = server.cpu_s(), time.monotonic()
    out = subprocess.run([PY, "-c", code, server.url, kind, str(n)], env={**env, "PREFECT_API_URL": server.url},
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{kind}: {out.stderr[-1500:]}")
    info: dict[str, object] = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            info.update(json.loads(line))
    if kind == "recorded":
        info["recorded"] = wait_recorded(server.url, str(info["flow_run_id"]), 5 * n)
    time.sleep(drain_s)  # the event persister and the recorder flush on a timer too
    server.settle()
    cpu = server.cpu_s() - before
    return cpu, cpu - idle * (time.monotonic() - t0), info


def idle_cores(server: PrefectServer, seconds: float) -> float:
    """The server's CPU while nothing talks to it (its services' loops), in cores."""
    server.settle()
    before, t0 = server.cpu_s(), time.monotonic()
    time.sleep(seconds)
    return (server.cpu_s() - before) / (time.monotonic() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("api", "prefect", "recorded"), default="api")
    parser.add_argument("--kinds", help="comma-separated subset (default: all of the level's kinds)")
    parser.add_argument("--n", type=int, default=40, help="items per child (default 40)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--configs", default="default", help=f"server configurations, one server each, side by side "
                        f"in the same rounds: {', '.join(CONFIGS)}, all (every preset together)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME:KEY=VALUE,KEY=VALUE",
                        help="one more server configuration, repeatable")
    parser.add_argument("--idle", type=float, default=0.0, help="also measure each server idle this long per round")
    parser.add_argument("--drain", type=float, default=0.0, help="seconds to wait after each child before settling")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kinds = args.kinds.split(",") if args.kinds else {"api": API_KINDS, "prefect": PREFECT_KINDS,
                                                      "recorded": RECORDED_KINDS}[args.level]
    code = API_CHILD if args.level == "api" else PREFECT_CHILD
    configs = parse_configs(args.configs, args.config)
    tmp = Path(tempfile.mkdtemp(prefix="server-cost-"))
    servers = {name: PrefectServer(tmp / f"server-prefect-{name}") for name in configs}
    env = {**os.environ, "PREFECT_HOME": str(tmp / "client-prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    cpu: dict[str, list[float]] = {}
    busy: dict[str, list[float]] = {}
    idle: dict[str, list[float]] = {}
    client: dict[str, list[float]] = {}
    reads: dict[str, dict[str, int]] = {}
    load = [os.getloadavg()]
    try:
        for name, server in servers.items():
            server.env.update(configs[name])
            print(f"prefect server [{name}] on {server.url}: healthy after {server.start():.1f} s", flush=True)
        for rnd in range(args.reps):
            for name, server in servers.items():
                rate = idle_cores(server, args.idle) if args.idle else 0.0
                idle.setdefault(name, []).append(rate)
                for kind in kinds:
                    key = kind if len(servers) == 1 else f"{name} {kind}"
                    total, less, info = run_child(server, code, kind, args.n, env, args.drain, rate)
                    cpu.setdefault(key, []).append(total)
                    busy.setdefault(key, []).append(less)
                    client.setdefault(key, []).append(float(info.get("client_cpu_s", 0.0)))  # type: ignore[arg-type]
                    if kind == "recorded":
                        reads[name] = ui_reads(server.url, str(info["flow_run_id"]))
                    print(f"  round {rnd}: {key:<30} server CPU {total:6.2f} s (less idle {less:6.2f})  idle "
                          f"{rate * 100:4.1f} %  {json.dumps({k: v for k, v in info.items() if k != 'flow_run_id'})}", flush=True)
            load.append(os.getloadavg())
    finally:
        for server in servers.values():
            server.stop()
    report(args, kinds, configs, cpu, busy, idle, client, reads, load)


def report(args: argparse.Namespace, kinds: list[str], configs: dict[str, dict[str, str]],
           cpu: dict[str, list[float]], busy: dict[str, list[float]], idle: dict[str, list[float]],
           client: dict[str, list[float]], reads: dict[str, dict[str, int]], load: list[tuple[float, ...]]) -> None:
    """Medians per child and per item (less the ``none`` child of the same server), and the UI reads."""
    med = statistics.median
    print(f"\nserver CPU per child, median of {args.reps} ({args.n} items each; subtract the setup kinds, docstring)"
          f"; load {load[0][0]:.1f} .. {max(x[0] for x in load):.1f}")
    print("| config | kind | server CPU (min–max) | less `none`, per item | less idle too, per item | client CPU "
          "per item | server idle |")
    print("|---|---|---|---|---|---|---|")
    for name in configs:
        for kind in kinds:
            key, base = (kind, "none") if len(configs) == 1 else (f"{name} {kind}", f"{name} none")
            per = (med(cpu[key]) - med(cpu.get(base, [0.0]))) / args.n * 1000
            per_busy = (med(busy[key]) - med(busy.get(base, [0.0]))) / args.n * 1000
            per_client = (med(client[key]) - med(client.get(base, [0.0]))) / args.n * 1000
            print(f"| {name} | {kind} | {med(cpu[key]):.2f} s ({min(cpu[key]):.2f}–{max(cpu[key]):.2f}) | "
                  f"{per:.1f} ms | {per_busy:.1f} ms | {per_client:.1f} ms | {med(idle[name]) * 100:.1f} % |")
    for name, got in reads.items():
        print(f"UI reads [{name}]: {got}")
    if args.json:
        args.json.write_text(json.dumps({"level": args.level, "n": args.n, "configs": configs, "cpu_s": cpu,
                                         "less_idle_s": busy, "client_cpu_s": client, "idle_cores": idle,
                                         "ui_reads": reads, "load": load}, indent=1) + "\n")


if __name__ == "__main__":
    main()
