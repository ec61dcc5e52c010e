#!/usr/bin/env python
"""What steering costs a benchmark: the same ``bench`` with its control channel on and off, side by side.

A benchmark run polls its control Variable and writes its status Variable while it runs
(docs/controlling-a-run.md). This runs one small benchmark (``task_overhead.py``'s reference pair:
the email env, the scripted agent, one prompt, one state check; recorded as the CLI sweep test
records it, ``task_runs_as: tasks`` with a warm pool) two ways, interleaved, against one real
``prefect server start`` (SQLite):

* ``steering`` -- ``prefect-agentenv bench`` as it is;
* ``off``      -- the same, its control channel switched off (``_no_steering.py``: no Variables,
                  no polling).

Each is started through ``_api_calls.py``, so every Prefect request is timed, and each run is cut
into phases: ``start`` (spawn → the benchmark's flow run created), ``run`` (→ its final state) and
``end`` (→ the process exits). ``--before TREE`` runs both modes from an older source tree too, in
the same rounds (``--code TREE`` runs the current side from a tree too). Medians of ``--reps`` rounds are printed side by side.

    python benchmarks/control_overhead.py --reps 5 --runs 8 --concurrency 2 [--before TREE] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_overhead import HERE, PY, Bench, PrefectServer, reference_pair, run_child  # noqa: E402

HELPERS = {"steering": HERE / "_api_calls.py", "off": HERE / "_no_steering.py"}


def phases(calls: list[dict[str, Any]], wall: float) -> dict[str, float]:
    """Spawn → flow run created → its final state → exit, from the request timeline (seconds)."""
    api = [c for c in calls if "/api/" in c["call"]]
    created = next((c["at"] for c in api if c["call"] == "POST /api/flow_runs/"), 0.0)
    states = [c["at"] + c["took"] for c in api if c["call"] == "POST /api/flow_runs/{id}/set_state"]
    final = states[-1] if states else created
    return {"start": created, "run": final - created, "end": max(wall - final, 0.0)}


def control_calls(calls: list[dict[str, Any]]) -> dict[str, float]:
    """The control channel's own requests (the Variables) and their time; every 503 of the run."""
    own = [c for c in calls if "/api/variables" in c["call"]]
    return {"variable_requests": len(own), "variable_writes": sum(1 for c in own if not c["call"].startswith("GET")),
            "variable_seconds": round(sum(c["took"] for c in own), 3),
            "busy_503": sum(1 for c in calls if c["status"] == 503)}


def one(bench: Bench, mode: str, runs: int, concurrency: int, n: int) -> dict[str, Any]:
    calls_file = bench.tmp / f"api-{mode}-{n}.json"
    env = {**bench.env, "BENCH_API_CALLS": str(calls_file)}
    wall, cpu, server_cpu, code, out = run_child(
        [PY, str(HELPERS[mode]), "bench", str(bench.bench_pool_file), "--epochs", str(runs), "--concurrency",
         str(concurrency), "--report-dir", str(bench.tmp / f"reports-{mode}-{n}")], env, bench.server, bench.tmp)
    data = json.loads(calls_file.read_text()) if calls_file.exists() else {"calls": []}
    return {"wall_s": round(wall, 3), "client_cpu_s": round(cpu, 3), "server_cpu_s": round(server_cpu, 3),
            "ok": code == 0, **{k: round(v, 3) for k, v in phases(data["calls"], wall).items()},
            **control_calls(data["calls"]), **({} if code == 0 else {"output": out[-1500:]})}


def median_row(rows: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k in rows[0] if isinstance(rows[0][k], (int, float)) and not isinstance(rows[0][k], bool)]
    return {k: statistics.median(r[k] for r in rows) for k in keys}


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    cols = ["wall_s", "start", "run", "end", "client_cpu_s", "server_cpu_s", "variable_requests", "variable_writes",
            "variable_seconds", "busy_503"]
    lines = ["| side | " + " | ".join(cols) + " | ok |", "|---|" + "---|" * (len(cols) + 1)]
    for side, rows in results.items():
        med = median_row(rows)
        ok = f"{sum(r['ok'] for r in rows)}/{len(rows)}"
        lines.append(f"| {side} | " + " | ".join(f"{med[c]:.2f}" if isinstance(med[c], float) else str(med[c])
                                                 for c in cols) + f" | {ok} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="measured rounds (default 5)")
    parser.add_argument("--runs", type=int, default=8, help="task runs per bench (default 8)")
    parser.add_argument("--concurrency", type=int, default=2, help="bench concurrency (default 2)")
    parser.add_argument("--code", type=Path, help="run the package from this source tree (PYTHONPATH)")
    parser.add_argument("--before", type=Path, help="also run both modes from this source tree (PYTHONPATH)")
    parser.add_argument("--modes", default="steering,off", help="steering, off or both (default both)")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the server is stopped by its handle
    tmp = Path(tempfile.mkdtemp(prefix="control-overhead-"))
    server = PrefectServer(tmp / "server")
    load = os.getloadavg()
    print(f"prefect server healthy after {server.start():.1f} s", flush=True)
    try:
        trees = {"current": args.code, **({"before": args.before} if args.before else {})}
        benches = {name: Bench(argparse.Namespace(shell=False), tmp, server, reference_pair(), code=code,
                               label=name, recording="tasks") for name, code in trees.items()}
        for bench in benches.values():
            bench.prepare()
            bench.bench(1, 1, pool=True)  # a warm-up: the flow, the blocks and the artifact keys exist once
        results: dict[str, list[dict[str, Any]]] = {}
        for n in range(args.reps):
            for tree, bench in benches.items():
                for mode in args.modes.split(","):
                    row = one(bench, mode, args.runs, args.concurrency, n)
                    results.setdefault(f"{tree} {mode}", []).append(row)
                    print(f"round {n + 1} {tree} {mode}: {row}", flush=True)
    finally:
        server.stop()
    load = (*load, *os.getloadavg())
    print(f"\n{args.runs} task runs at concurrency {args.concurrency}, medians of {args.reps} "
          f"(load {min(load):.1f}-{max(load):.1f}):\n\n{table(results)}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "load": load,
                                         "results": results}, indent=1))


if __name__ == "__main__":
    main()
