#!/usr/bin/env python
"""A nightly benchmark at scale on one machine: N task runs, a warm pool, against bare asyncio.

The task is the reference email task of ``task_overhead.py`` — start the env, load its seed,
start the scripted agent beside it, one prompt (the agent sends one email over MCP and holds the
prompt ``--agent-delay`` seconds, as a model would), check the env's state — with a seed
placeholder in its prompt, run ``--runs`` times (seed rows × epochs) at ``--concurrency``, with
``pool: true`` and the default recording, against one real ``prefect server start`` on SQLite or
PostgreSQL. While it runs the script samples the flow process's and the server's memory beside the
results written, and reads the API as the Prefect UI does (the flow-runs list and flow-run pages)
about once a second, timing every call. Then the results file is read back: no result lost, none
duplicated.

With ``--kill-at 0.5`` the benchmark's process is killed (SIGKILL, its process group) once half
the results are in, and ``bench --resume RUN_ID`` finishes the run: exactly N results, and no task
run that had finished runs again. With ``--workers 2`` the task runs go to a process work pool
instead (``dispatch: deployment``): the ``agent-task`` deployment of ``prefect.yaml``, two
``prefect worker start`` processes, and the benchmark flow started in a process of its own; with
``--tasks-per-flow-run 16`` too, sixteen task runs to a flow run of ``agent-task-shard``, each
worker running as many shards at once as its share of the concurrency fills.

The bare equivalent (``_bare.py --pool``: the same servers, the same agent delay, the same number
of runs at the same concurrency, warm processes) runs first, for the throughput ratio.

Usage::

    python benchmarks/nightly_scale.py --runs 1000 --concurrency 32 --database sqlite --kill-at 0.5 \\
        --json benchmarks/results/nightly_scale_sqlite.json
    python benchmarks/nightly_scale.py --runs 40 --concurrency 8 --database postgres --workers 2
    python benchmarks/nightly_scale.py --runs 1000 --concurrency 32 --database postgres --workers 2 \
        --tasks-per-flow-run 16
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scale_watch import Sampler, UiReader, check_results, count_lines, machine_busy_s, read_lines  # noqa: E402
from server_cost import parse_configs  # noqa: E402
from task_overhead import CLI, HERE, PLAN, PY, ROOT, PrefectServer, group_cpu_s, reference_pair, stop_group  # noqa: E402

SLUG = "nightly-scale"
SIGNERS = ["Sam", "Sam Rivera", "S. Rivera", "Sam R.", "Samantha Rivera", "the Finance team", "Sam (Finance)",
           "SR", "Rivera", "Sam from Finance"]


RECORDINGS: dict[str, dict[str, Any]] = {"full": {}, "lean": {"step_task_runs": False}, "tasks": {"task_runs_as": "tasks"}}
"""How the benchmark is recorded in Prefect (``--recording``): the default, or one of the two opt-ins."""


def write_benchmark(folder: Path, runs: int, concurrency: int, seeds: int, delay: float, pool: bool,
                    recording: str = "full", tasks_per_flow_run: int = 1) -> dict[str, Any]:
    """The benchmark (seed rows × epochs = ``runs``) and the bare driver's pair file, in ``folder``."""
    if runs % seeds:
        raise SystemExit(f"--runs {runs} is not a multiple of --seeds {seeds}")
    pair = reference_pair()
    plan = {**PLAN, "sleep_seconds": delay}
    steps = [dict(s) for s in pair.steps]
    for step in steps:
        if step["type"] == "deploy_agent":
            step["agent_config"] = {"plan": plan}
        if step["type"] == "prompt_agent":
            step["prompt"] = "Reply to Dana, and sign as <signer>."
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps({"id": "reply", "steps": steps}, indent=1))
    (folder / "seeds.csv").write_text("signer\n" + "".join(f'"{s}"\n' for s in SIGNERS[:seeds]))
    bench = {"name": "nightly at scale", "slug": SLUG, "version": 1, "tasks": [{"id": "reply", "path": "task.json"}],
             "seeds": {"csv": "seeds.csv"}, "epochs": runs // seeds, "concurrency": concurrency, "pool": pool,
             "defaults": {"timeout_seconds": 600}, **RECORDINGS[recording],
             **({"tasks_per_flow_run": tasks_per_flow_run} if tasks_per_flow_run > 1 else {})}
    (folder / "bench.json").write_text(json.dumps(bench, indent=1))
    (folder / "pair.json").write_text(json.dumps({**pair.bare, "agent_config": {"plan": plan},
                                                  "prompt": "Reply to Dana, and sign as Sam."}))
    return bench


class Harness:
    """One server, the client environment, and the commands run against them."""

    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args, self.tmp = args, tmp
        self.server = PrefectServer(tmp / "server", args.database)
        self.server.env.update(parse_configs(args.server_config, [])[args.server_config])
        self.home = tmp / "agentenv"
        self.env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                    "PREFECT_API_URL": self.server.url, "PREFECT_HOME": str(tmp / "client-prefect"),
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_AGENTENV_HOME": str(self.home),
                    "PREFECT_LOGGING_LEVEL": "WARNING"}
        self.bench_dir = tmp / "bench"
        self.workers: list[subprocess.Popen[bytes]] = []
        self._results: Path | None = None

    def prepare(self) -> None:
        write_benchmark(self.bench_dir, self.args.runs, self.args.concurrency, self.args.seeds, self.args.agent_delay,
                        pool=not self.args.workers, recording=self.args.recording,
                        tasks_per_flow_run=self.args.tasks_per_flow_run)
        subprocess.run([CLI, "artifact", "put", "inbox", str(ROOT / "examples/artifacts/inbox.json"), "--environment",
                        "email"], env=self.env, check=True, stdout=subprocess.DEVNULL)
        if self.args.workers:
            self.start_workers()

    def start_workers(self) -> None:
        """A process pool, the ``agent-task`` and ``agent-task-shard`` deployments of prefect.yaml, and the
        workers; with shards, each worker runs as many at a time as its share of the concurrency fills."""
        folder = self.tmp / "deploy"
        folder.mkdir()
        shutil.copy(ROOT / "prefect.yaml", folder / "prefect.yaml")
        env = {**self.env, "PREFECT_AGENTENV_BENCHMARK": str(self.bench_dir / "bench.json"),
               "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "1"}
        prefect = str(Path(PY).parent / "prefect")
        subprocess.run([prefect, "work-pool", "create", "agentenv", "--type", "process"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([prefect, "--no-prompt", "deploy", "--name", "agent-task", "--name", "agent-task-shard"],
                       env=env, cwd=folder, check=True,
                       stdout=subprocess.DEVNULL)
        shards = self.args.tasks_per_flow_run
        per_worker = -(-self.args.concurrency // (shards * self.args.workers))
        limit = ["--limit", str(per_worker)] if shards > 1 else []
        for i in range(self.args.workers):
            log = (self.tmp / f"worker-{i}.log").open("wb")
            self.workers.append(subprocess.Popen([prefect, "worker", "start", "--pool", "agentenv", "--name",
                                                  f"worker-{i}", *limit], env=env, cwd=folder, stdout=log,
                                                 stderr=subprocess.STDOUT, start_new_session=True))
        time.sleep(5)
        for w in self.workers:
            if w.poll() is not None:
                raise SystemExit(f"a worker exited with {w.returncode}: see {self.tmp}/worker-*.log")

    def results_file(self) -> Path | None:
        """The run's results.jsonl (looked for until found: the tree under the home grows with every run)."""
        if self._results is None:
            found = sorted(self.home.glob(f"store/**/benchmarks/{SLUG}/*/results.jsonl"))
            self._results = found[0] if found else None
        return self._results

    def run_id(self) -> str | None:
        results = self.results_file()
        return results.parent.name if results else None

    def server_pgids(self) -> list[int]:
        procs = [self.server.proc, self.server.postgres.proc if self.server.postgres else None]
        return [p.pid for p in procs if p is not None]

    def worker_cpu_s(self) -> float:
        return sum(group_cpu_s(w.pid) for w in self.workers)

    def bare(self) -> dict[str, Any]:
        """The bare asyncio equivalent: same runs, concurrency, agent delay, warm processes."""
        t0, busy0 = time.monotonic(), machine_busy_s()
        proc = subprocess.Popen([PY, str(HERE / "_bare.py"), str(self.bench_dir / "pair.json"), "--runs",
                                 str(self.args.runs), "--concurrency", str(self.args.concurrency), "--pool"],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.tmp)
        out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        last = next((json.loads(x) for x in reversed(out.splitlines()) if x.startswith("{")), {})
        return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                "machine_busy_s": round(machine_busy_s() - busy0, 2), "exit": os.waitstatus_to_exitcode(status),
                "passed": last.get("passed"), "runs": self.args.runs,
                "throughput_per_s": round(self.args.runs / wall, 3)}

    def bench_argv(self, resume: str | None) -> list[str]:
        if self.args.workers:
            code = ("import asyncio, sys; from prefect_agentenv.flows.benchmark import benchmark; "
                    "s = asyncio.run(benchmark(path=sys.argv[1], run_id=sys.argv[2] or None, concurrency=int(sys.argv[3]), "
                    "dispatch='deployment', return_state=True)); print(s.type.value, s.message); "
                    "sys.exit(0 if s.is_completed() else 1)")
            return [PY, "-c", code, str(self.bench_dir / "bench.json"), resume or "", str(self.args.concurrency)]
        return [CLI, "bench", str(self.bench_dir / "bench.json"), "--concurrency", str(self.args.concurrency),
                *(["--resume", resume] if resume else [])]

    def bench(self, *, resume: str | None = None, kill_at: int | None = None) -> dict[str, Any]:
        """One ``bench`` process, watched; killed (its group, SIGKILL) once ``kill_at`` results are in."""
        log = (self.tmp / f"bench-{'resume' if resume else 'first'}.log").open("wb")
        s0, w0, busy0, t0 = self.server.cpu_s(), self.worker_cpu_s(), machine_busy_s(), time.monotonic()
        proc = subprocess.Popen(self.bench_argv(resume), env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.tmp, start_new_session=True)
        alive = [True]
        sampler = Sampler(lambda: proc.pid if alive[0] else None, self.server_pgids(),
                          lambda: count_lines(self.results_file()), self.args.sample_every).start()
        ui = UiReader(self.server.url, self.args.ui_every).start()
        killed, reaped = False, (0, 0, None)
        try:
            while True:  # reaped with wait4 (not Popen.poll) to read the CPU of the tree it reaped
                reaped = os.wait4(proc.pid, os.WNOHANG)
                if reaped[0]:
                    break
                if not killed and kill_at is not None and count_lines(self.results_file()) >= kill_at:
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed = True
                if time.monotonic() - t0 > self.args.limit_s:
                    raise SystemExit(f"bench did not finish in {self.args.limit_s} s: see {log.name}")
                time.sleep(0.5)
            wall = time.monotonic() - t0
            proc.returncode = os.waitstatus_to_exitcode(reaped[1])
        finally:
            alive[0] = False
            sampler.stop()
            ui.stop()
            stop_group(proc, signal.SIGKILL, 5)
        status, usage = reaped[1], reaped[2]
        self.server.settle(120.0)  # what the server still had to write belongs to this run
        return {"wall_s": round(wall, 2), "killed": killed, "exit": None if killed else os.waitstatus_to_exitcode(status),
                "client_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                "worker_cpu_s": round(self.worker_cpu_s() - w0, 2),
                "server_cpu_s": round(self.server.cpu_s() - s0, 2),
                "machine_busy_s": round(machine_busy_s() - busy0, 2), "load_after": os.getloadavg(),
                "memory": sampler.summary(self.args.runs),
                "memory_series": [s.__dict__ for s in sampler.samples], "ui_reads": ui.summary(),
                "results_at_end": count_lines(self.results_file()),
                **({} if killed or proc.returncode == 0 else {"output": Path(log.name).read_text(errors="replace")[-3000:]})}

    def stop(self) -> None:
        for w in self.workers:
            stop_group(w, signal.SIGTERM, 30.0)
        self.server.stop()


def steady_rate(series: list[dict[str, Any]], runs: int) -> float | None:
    """Results a second between the samples at 10 % and 90 % of ``runs``: the rate without the run's start and end."""
    lo = next((x for x in series if x["results"] >= runs * 0.1), None)
    hi = next((x for x in series if x["results"] >= runs * 0.9), None)
    if lo is None or hi is None or hi["t_s"] <= lo["t_s"]:
        return None
    return round((hi["results"] - lo["results"]) / (hi["t_s"] - lo["t_s"]), 3)


def per_task(leg: dict[str, Any], runs: int) -> dict[str, Any]:
    return {k: round(leg[k] / runs, 3) for k in ("client_cpu_s", "worker_cpu_s", "server_cpu_s", "machine_busy_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="task runs (seed rows × epochs; default 1000)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=4, help="seed rows (the rest are epochs; default 4)")
    parser.add_argument("--agent-delay", type=float, default=2.0, help="seconds the agent holds each prompt")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--kill-at", type=float, help="kill the benchmark's process at this share of results, resume")
    parser.add_argument("--workers", type=int, default=0, help="dispatch to a process pool with this many workers")
    parser.add_argument("--tasks-per-flow-run", type=int, default=1,
                        help="with --workers, task runs per flow run on the pool (shards of agent-task-shard)")
    parser.add_argument("--recording", choices=sorted(RECORDINGS), default="full",
                        help="full (the default recording), lean (step_task_runs: false), tasks (task_runs_as: tasks)")
    parser.add_argument("--server-config", default="default",
                        help="a server configuration from benchmarks/server_cost.py (e.g. recorder-batch)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare asyncio equivalent")
    parser.add_argument("--sample-every", type=float, default=3.0, help="seconds between memory samples")
    parser.add_argument("--ui-every", type=float, default=1.0, help="seconds between rounds of the UI's reads")
    parser.add_argument("--limit-s", type=float, default=7200.0, help="give up on a bench after this long")
    parser.add_argument("--json", type=Path, help="write the measurements here (and a .txt summary beside it)")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nightly-scale-"))
    h = Harness(args, tmp)
    out: dict[str, Any] = {"label": args.label, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "load_before": os.getloadavg()},
                           "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    try:
        print(f"prefect server ({args.database}) healthy after {h.server.start():.1f} s", flush=True)
        h.prepare()
        if not args.no_bare:
            out["bare"] = h.bare()
            print("bare:", json.dumps(out["bare"]), flush=True)
        kill_at = round(args.runs * args.kill_at) if args.kill_at else None
        first = h.bench(kill_at=kill_at)
        out["legs"] = [first]
        print("bench:", json.dumps({k: v for k, v in first.items() if k != "memory_series"})[:1500], flush=True)
        if first["killed"]:
            before = read_lines(h.results_file())
            run_id = h.run_id()
            if run_id is None:
                raise SystemExit("no run id to resume")
            second = h.bench(resume=run_id)
            out["legs"].append(second)
            print("resume:", json.dumps({k: v for k, v in second.items() if k != "memory_series"})[:1500], flush=True)
            out["results"] = check_results(read_lines(h.results_file()), args.runs, before)
        else:
            out["results"] = check_results(read_lines(h.results_file()), args.runs)
        wall = sum(leg["wall_s"] for leg in out["legs"])
        totals = {k: sum(leg[k] for leg in out["legs"]) for k in ("client_cpu_s", "worker_cpu_s", "server_cpu_s",
                                                                     "machine_busy_s")}
        out["summary"] = {"wall_s": round(wall, 1), "throughput_per_s": round(args.runs / wall, 3),
                          "steady_per_s": None if first["killed"] else steady_rate(first["memory_series"], args.runs),
                          "per_task_run": per_task(totals, args.runs),
                          **({"throughput_vs_bare": round(out["bare"]["wall_s"] / wall, 3)} if "bare" in out else {})}
        print("summary:", json.dumps(out["summary"]), "results:", json.dumps(out["results"]), flush=True)
    finally:
        h.stop()
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(out, indent=1) + "\n")
            args.json.with_suffix(".txt").write_text(render(out))
            print(f"written: {args.json}")
        shutil.rmtree(tmp, ignore_errors=True)


def render(out: dict[str, Any]) -> str:
    """The recorded run as text: the headline numbers of every leg."""
    lines = [f"{out['when']}  {json.dumps(out['args'])}", f"load before: {out['machine']['load_before']}"]
    if "bare" in out:
        lines.append(f"bare: {json.dumps(out['bare'])}")
    for i, leg in enumerate(out.get("legs", [])):
        lines.append(f"leg {i}: wall {leg['wall_s']} s, killed {leg['killed']}, exit {leg['exit']}, results at end "
                     f"{leg['results_at_end']}, client CPU {leg['client_cpu_s']} s, workers {leg['worker_cpu_s']} s, "
                     f"server CPU {leg['server_cpu_s']} s, machine busy {leg['machine_busy_s']} s")
        lines.append(f"  memory: {json.dumps(leg['memory'])}")
        for page, s in leg["ui_reads"]["pages"].items():
            lines.append(f"  UI {page}: p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms (n={s['n']})")
        for call, s in leg["ui_reads"]["calls"].items():
            lines.append(f"    {call}: p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms")
        lines.append(f"  UI errors: {json.dumps(leg['ui_reads']['errors'])}")
    for key in ("summary", "results"):
        if key in out:
            lines.append(f"{key}: {json.dumps(out[key])}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
