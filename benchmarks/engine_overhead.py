#!/usr/bin/env python
"""Per-step overhead of the engine: the ``agent_task`` flow vs the bare scheduler vs bare asyncio.

Every step is a no-op, so the wall time of a run is pure engine overhead. Three ways to run the
same DAG are timed side by side, interleaved, in one process:

* ``flow``      -- the ``agent_task`` Prefect flow: one flow run, one Prefect task run per step
                   (what a real run pays);
* ``scheduler`` -- ``run_task_document(..., execute_in_prefect=False, publish=False)``: the same
                   DagScheduler, context merging, ${VAR} resolution and report, Prefect bypassed;
* ``bare``      -- a minimal hand-written asyncio equivalent (one asyncio task per step awaiting
                   its dependencies' futures, each step a no-op coroutine): the floor.

Shapes: ``chain`` (each step depends on the previous one) and ``fanout`` (one root, N-2
independent children, one final join that depends on every child), N steps in total.

Besides wall time (median / min / max over the repetitions) the script records, per run: the
CPU time of this process (client CPU, event-shipping thread included), the CPU time of the
temporary API server and how long it stayed busy after the run returned (it records task runs
from events after the fact), and how often the Prefect client had to retry an API call (e.g. a
503 from a locked SQLite database) -- with the median of the runs that needed no retry. With
two sizes it also fits cost = fixed + N x marginal per mode.

One Prefect API serves the whole run: a temporary one from ``prefect_test_harness()`` by
default, or the server named by ``PREFECT_API_URL`` when that variable is set (for example a
``prefect server start`` on another terminal).

Usage::

    python benchmarks/engine_overhead.py [--reps 5] [--sizes 10,100] [--warmup 1] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

MODES = ("flow", "scheduler", "bare")
SHAPES = ("chain", "fanout")
STEP_TYPE = "bench_noop"


# --------------------------------------------------------------------------- DAG shapes


def dag(shape: str, n: int) -> dict[str, list[str]]:
    """Step id -> ids of its dependencies, in document order."""
    ids = [f"s{i:03d}" for i in range(n)]
    if shape == "chain":
        return {sid: ([ids[i - 1]] if i else []) for i, sid in enumerate(ids)}
    if shape == "fanout":
        if n < 3:
            raise ValueError("fanout needs at least 3 steps (root, child, join)")
        root, children, join = ids[0], ids[1:-1], ids[-1]
        return {root: [], **{c: [root] for c in children}, join: list(children)}
    raise ValueError(f"unknown shape {shape!r}")


# --------------------------------------------------------------------------- the three runners


async def run_bare(deps: dict[str, list[str]]) -> int:
    """The floor: one asyncio task per step, awaiting its dependencies' futures."""
    loop = asyncio.get_running_loop()
    done: dict[str, asyncio.Future[Any]] = {sid: loop.create_future() for sid in deps}

    async def noop(inputs: list[Any]) -> dict[str, Any]:
        return {}

    async def one(sid: str) -> None:
        inputs = [await done[d] for d in deps[sid]]
        done[sid].set_result(await noop(inputs))

    await asyncio.gather(*(asyncio.create_task(one(sid)) for sid in deps))
    return len(done)


def make_runners() -> dict[str, Callable[[Any, dict[str, list[str]]], Awaitable[int]]]:
    """Runners for the two engine modes; imported late, after the environment is set."""
    from prefect_agentenv.flows.agent_task import agent_task, run_task_document

    async def run_flow(document: Any, deps: dict[str, list[str]]) -> int:
        state = await agent_task(task=document, return_state=True)
        if not state.is_completed():
            raise RuntimeError(f"flow run ended {state.type.value}: {state.message}")
        return len(deps)

    async def run_scheduler(document: Any, deps: dict[str, list[str]]) -> int:
        report = await run_task_document(document, execute_in_prefect=False, publish=False)
        if report.status == "failed":
            raise RuntimeError(f"scheduler run failed: {report.error}")
        return len(report.steps)

    async def run_bare_mode(document: Any, deps: dict[str, list[str]]) -> int:
        return await run_bare(deps)

    return {"flow": run_flow, "scheduler": run_scheduler, "bare": run_bare_mode}


def register_noop_step() -> None:
    """A benchmark-local no-op step type, so the benchmark needs no test plugin."""
    from typing import Literal

    from prefect_agentenv.context import RunContext
    from prefect_agentenv.steps.base import StepModel
    from prefect_agentenv.steps.registry import StepDefinition, register

    class BenchNoopStep(StepModel):
        """Does nothing: returns the merged context of its dependencies."""

        type: Literal["bench_noop"] = "bench_noop"

    async def run_bench_noop(step: BenchNoopStep, ctx: RunContext) -> RunContext:
        return ctx

    register(StepDefinition(BenchNoopStep, run_bench_noop), replace=True)


def build_document(shape: str, n: int, deps: dict[str, list[str]]) -> Any:
    from prefect_agentenv.documents import validate_data

    data = {
        "id": f"bench-{shape}-{n}",
        "steps": [{"id": sid, "type": STEP_TYPE, "depends_on": d} for sid, d in deps.items()],
    }
    return validate_data(data).raise_for_problems(f"bench-{shape}-{n}")


# --------------------------------------------------------------------------- measurement


class ApiServer:
    """Waits until the Prefect API server has finished the work a run left behind.

    Task runs are created client-side and reported to the server as events; the server records
    them after the flow has returned. Left alone, that backlog would land in the next
    measurement. With the temporary server we know its process and wait until its CPU use drops
    (Linux /proc); with an external server we can only idle for ``--settle`` seconds.
    """

    def __init__(self, pid: int | None, settle: float, timeout: float = 60.0) -> None:
        self.pid = pid if pid and Path(f"/proc/{pid}/stat").exists() else None
        self.settle = settle
        self.timeout = timeout
        self._tick = os.sysconf("SC_CLK_TCK") if self.pid else 100

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system) the server process has used so far."""
        if self.pid is None:
            return None
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self._tick

    async def quiesce(self, after_flow: bool = True) -> float:
        """Wait until the server is idle; return how long it stayed busy.

        Idle means two consecutive 100 ms windows using at most 10 % of a core, so the answer
        is the wait minus those 200 ms. Without a known server process, sleep ``settle``
        seconds after flow runs (the other modes leave no work on the server).
        """
        t0 = time.perf_counter()
        if self.pid is None:
            if after_flow:
                await asyncio.sleep(self.settle)
            return 0.0
        quiet = 0
        while quiet < 2 and time.perf_counter() - t0 < self.timeout:
            c0 = self.cpu_s() or 0.0
            await asyncio.sleep(0.1)
            quiet = quiet + 1 if (self.cpu_s() or 0.0) - c0 <= 0.01 else 0
        return max(0.0, time.perf_counter() - t0 - 0.2)


class ClientRetries(logging.Handler):
    """Counts the Prefect client's retry back-offs (e.g. on HTTP 503) and the seconds slept.

    The client announces each retry in a DEBUG record on ``prefect.client``; those records
    are routed here only (not to the console).
    """

    PATTERN = re.compile(r"Another attempt will be made in ([0-9.]+)s")

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.count = 0
        self.seconds = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        match = self.PATTERN.search(str(record.msg))
        if match:
            self.count += 1
            self.seconds += float(match.group(1))
        if record.levelno >= logging.WARNING:  # still show real warnings
            logging.getLogger("prefect").handle(record)

    def install(self) -> ClientRetries:
        log = logging.getLogger("prefect.client")
        log.setLevel(logging.DEBUG)
        log.propagate = False
        log.addHandler(self)
        return self


async def measure(reps: int, warmup: int, sizes: list[int], shapes: list[str], server: ApiServer) -> dict[str, Any]:
    runners = make_runners()
    cases = [(shape, n) for n in sizes for shape in shapes]
    docs = {(shape, n): (build_document(shape, n, dag(shape, n)), dag(shape, n)) for shape, n in cases}
    keys = [(s, n, m) for s, n in cases for m in MODES]
    times: dict[tuple[str, int, str], list[float]] = {k: [] for k in keys}
    client_cpu: dict[tuple[str, int, str], list[float]] = {k: [] for k in keys}
    server_cpu: dict[tuple[str, int, str], list[float]] = {k: [] for k in keys}
    drain: dict[tuple[str, int, str], list[float]] = {k: [] for k in keys}
    retries: dict[tuple[str, int, str], list[tuple[int, float]]] = {k: [] for k in keys}
    client_retries = ClientRetries().install()

    await server.quiesce()
    for rep in range(warmup + reps):
        label = "warm-up" if rep < warmup else f"rep {rep - warmup + 1}/{reps}"
        t_rep = time.perf_counter()
        for shape, n in cases:
            document, deps = docs[(shape, n)]
            for mode in MODES:  # interleaved: flow, scheduler, bare, flow, scheduler, bare, ...
                gc.collect()
                s0, c0 = server.cpu_s(), time.process_time()
                r0, rs0 = client_retries.count, client_retries.seconds
                t0 = time.perf_counter()
                steps_run = await runners[mode](document, deps)
                elapsed = time.perf_counter() - t0
                c1 = time.process_time()
                drained = await server.quiesce(mode == "flow")  # untimed: this run's server backlog
                s1 = server.cpu_s()
                if steps_run != n:
                    raise RuntimeError(f"{mode} {shape} N={n}: ran {steps_run} steps, expected {n}")
                if rep >= warmup:
                    k = (shape, n, mode)
                    times[k].append(elapsed)
                    client_cpu[k].append(c1 - c0)
                    drain[k].append(drained)
                    retries[k].append((client_retries.count - r0, round(client_retries.seconds - rs0, 3)))
                    if s0 is not None and s1 is not None:
                        server_cpu[k].append(s1 - s0)
        print(f"  {label} done in {time.perf_counter() - t_rep:.1f} s", file=sys.stderr, flush=True)

    results = []
    for shape, n in cases:
        bare_median = statistics.median(times[(shape, n, "bare")])
        for mode in MODES:
            k = (shape, n, mode)
            ts = times[k]
            med = statistics.median(ts)
            clean = [t for t, (count, _) in zip(ts, retries[k]) if not count]
            row: dict[str, Any] = {
                "shape": shape,
                "n_steps": n,
                "mode": mode,
                "runs_s": [round(t, 6) for t in ts],
                "runs_client_retries": [count for count, _ in retries[k]],
                "median_s": round(med, 6),
                "min_s": round(min(ts), 6),
                "max_s": round(max(ts), 6),
                "per_step_ms": round(1000 * med / n, 4),
                "overhead_per_step_ms": round(1000 * (med - bare_median) / n, 4),
                "ratio_to_bare": round(med / bare_median, 1),
                "client_cpu_median_s": round(statistics.median(client_cpu[k]), 4),
                "server_busy_after_median_s": round(statistics.median(drain[k]), 3),
                "runs_with_client_retries": sum(1 for c, _ in retries[k] if c),
                "median_without_retried_runs_s": round(statistics.median(clean), 6) if clean else None,
                "client_retries": sum(c for c, _ in retries[k]),
                "client_retry_sleep_s": round(sum(t for _, t in retries[k]), 3),
            }
            if server_cpu[k]:
                row["server_cpu_median_s"] = round(statistics.median(server_cpu[k]), 3)
            results.append(row)

    marginal = []
    if len(sizes) >= 2:
        lo, hi = min(sizes), max(sizes)
        by = {(r["shape"], r["n_steps"], r["mode"]): r for r in results}
        for shape in shapes:
            for mode in MODES:
                a, b = by[(shape, lo, mode)], by[(shape, hi, mode)]
                slope = (b["median_s"] - a["median_s"]) / (hi - lo)
                entry = {"shape": shape, "mode": mode, "from_n": lo, "to_n": hi,
                         "marginal_per_step_ms": round(1000 * slope, 4),
                         "fixed_per_run_ms": round(1000 * (a["median_s"] - slope * lo), 2),
                         "client_cpu_per_step_ms": round(
                             1000 * (b["client_cpu_median_s"] - a["client_cpu_median_s"]) / (hi - lo), 3)}
                a_clean, b_clean = a["median_without_retried_runs_s"], b["median_without_retried_runs_s"]
                if a_clean is not None and b_clean is not None:
                    entry["marginal_per_step_without_retried_runs_ms"] = round(
                        1000 * (b_clean - a_clean) / (hi - lo), 4)
                if "server_cpu_median_s" in a:
                    entry["server_cpu_per_step_ms"] = round(
                        1000 * (b["server_cpu_median_s"] - a["server_cpu_median_s"]) / (hi - lo), 3)
                marginal.append(entry)
    return {"results": results, "marginal": marginal}


# --------------------------------------------------------------------------- output


def print_tables(out: dict[str, Any]) -> None:
    rows = out["results"]
    head = (f"{'shape':<7} {'N':>4} {'mode':<10} {'median ms':>10} {'min ms':>9} {'max ms':>9} "
            f"{'ms/step':>8} {'overhead ms/step':>17} {'x bare':>8} {'client CPU ms':>14} {'server CPU ms':>14} "
            f"{'busy after ms':>14} {'runs w/ API retries':>20} {'median w/o retried':>19}")
    print(head)
    print("-" * len(head))
    for r in rows:
        server = f"{1000 * r['server_cpu_median_s']:>14.0f}" if "server_cpu_median_s" in r else f"{'-':>14}"
        retried = (f"{r['runs_with_client_retries']}/{len(r['runs_s'])} ({r['client_retry_sleep_s']:.1f} s)"
                   if r["runs_with_client_retries"] else f"0/{len(r['runs_s'])}")
        clean = (f"{1000 * r['median_without_retried_runs_s']:.2f}" if r["median_without_retried_runs_s"] is not None
                 else "-")
        print(f"{r['shape']:<7} {r['n_steps']:>4} {r['mode']:<10} {1000 * r['median_s']:>10.2f} "
              f"{1000 * r['min_s']:>9.2f} {1000 * r['max_s']:>9.2f} {r['per_step_ms']:>8.3f} "
              f"{r['overhead_per_step_ms']:>17.3f} {r['ratio_to_bare']:>8.1f} "
              f"{1000 * r['client_cpu_median_s']:>14.1f} {server} {1000 * r['server_busy_after_median_s']:>14.0f} "
              f"{retried:>20} {clean:>19}")
    print()
    by = {(r["shape"], r["n_steps"], r["mode"]): r["median_s"] for r in rows}
    print(f"{'shape':<7} {'N':>4} {'flow/bare':>10} {'scheduler/bare':>15} {'flow/scheduler':>15}")
    for shape, n in dict.fromkeys((r["shape"], r["n_steps"]) for r in rows):
        f, s, b = by[(shape, n, "flow")], by[(shape, n, "scheduler")], by[(shape, n, "bare")]
        print(f"{shape:<7} {n:>4} {f / b:>10.1f} {s / b:>15.1f} {f / s:>15.1f}")
    if out["marginal"]:
        print()
        m0 = out["marginal"][0]
        print(f"cost of one more step (linear fit of medians, N={m0['from_n']} -> N={m0['to_n']}):")
        print(f"{'shape':<7} {'mode':<10} {'wall ms/step':>13} {'fixed ms/run':>13} {'w/o retried ms/step':>20} "
              f"{'client CPU ms/step':>19} {'server CPU ms/step':>19}")
        for m in out["marginal"]:
            server = f"{m['server_cpu_per_step_ms']:>19.3f}" if "server_cpu_per_step_ms" in m else f"{'-':>19}"
            clean = m.get("marginal_per_step_without_retried_runs_ms")
            clean_s = f"{clean:>20.3f}" if clean is not None else f"{'-':>20}"
            print(f"{m['shape']:<7} {m['mode']:<10} {m['marginal_per_step_ms']:>13.3f} {m['fixed_per_run_ms']:>13.2f} "
                  f"{clean_s} {m['client_cpu_per_step_ms']:>19.3f} {server}")


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import prefect

    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "python": platform.python_version(),
        "prefect": prefect.__version__,
        "os": f"{platform.system()} {platform.release()}",
    }


# --------------------------------------------------------------------------- main


def _loadavg() -> list[float] | None:
    """System load (1, 5, 15 min): other processes on the machine skew every number here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _harness_server_pid() -> int | None:
    """Process id of the API server started by prefect_test_harness (None if not found)."""
    try:
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer._instances.get(None)
        process = getattr(server, "server_process", None)
        return process.pid if process is not None else None
    except Exception:
        return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5, help="measured repetitions per configuration (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured warm-up rounds first (default 1)")
    p.add_argument("--sizes", default="10,100", help="comma-separated step counts (default 10,100)")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes: chain,fanout")
    p.add_argument("--settle", type=float, default=5.0,
                   help="with an external API (PREFECT_API_URL), seconds to idle (untimed) after each run "
                        "so the server's backlog does not land in the next one (default 5); with the "
                        "temporary API the script waits until the server process is idle instead")
    p.add_argument("--json", dest="json_out", help="also write the raw results as JSON to this file")
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    for s in args.shapes:
        if s not in SHAPES:
            p.error(f"unknown shape {s!r}; choose from {', '.join(SHAPES)}")
    if args.reps < 1 or args.warmup < 0 or not args.sizes:
        p.error("need --reps >= 1, --warmup >= 0 and at least one size")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    home = tempfile.mkdtemp(prefix="agentenv-bench-")
    # Set before prefect / prefect_agentenv are imported: both read settings once.
    os.environ["PREFECT_AGENTENV_HOME"] = home
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    external_api = os.environ.get("PREFECT_API_URL")
    try:
        from contextlib import nullcontext

        from prefect.testing.utilities import prefect_test_harness

        register_noop_step()
        load_before = _loadavg()
        t0 = time.perf_counter()
        harness = nullcontext() if external_api else prefect_test_harness()
        with harness:
            api_start_s = time.perf_counter() - t0
            print(f"Prefect API: {'external (PREFECT_API_URL)' if external_api else 'prefect_test_harness'}"
                  f" ready in {api_start_s:.1f} s; {args.warmup} warm-up + {args.reps} measured rounds of "
                  f"{len(args.shapes) * len(args.sizes) * len(MODES)} runs; load average {load_before}",
                  file=sys.stderr, flush=True)
            t_measure = time.perf_counter()
            server = ApiServer(None if external_api else _harness_server_pid(), args.settle)
            out = asyncio.run(measure(args.reps, args.warmup, args.sizes, args.shapes, server))
            measure_s = time.perf_counter() - t_measure
        out = {
            "benchmark": "engine_overhead",
            "command": "python benchmarks/engine_overhead.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "parameters": {"reps": args.reps, "warmup": args.warmup, "sizes": args.sizes, "shapes": args.shapes,
                           "step_type": STEP_TYPE,
                           "fanout_layout": "1 root, N-2 children, 1 join"},
            "api": "external" if external_api else "prefect_test_harness",
            "api_startup_s": round(api_start_s, 2),
            "server_idle_detection": "cpu" if server.pid else f"fixed settle {args.settle} s",
            "measure_wall_s": round(measure_s, 1),
            "load_average_1_5_15": {"before": load_before, "after": _loadavg()},
            "machine": machine_info(),
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **out,
        }
        print_tables(out)
        if args.json_out:
            Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json_out).write_text(json.dumps(out, indent=2) + "\n")
            print(f"\nraw results written to {args.json_out}", file=sys.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
