"""The authoring loop's latency: `run` of one task with the home's local Prefect server against `--ephemeral`.

Each round runs, from fresh processes as a shell would, in alternating order: `run
examples/env-roundtrip.json` against the home's local server (started once, before the rounds, and
timed: the first command after a reboot pays it), the same with `--ephemeral` (Prefect's temporary
server started and stopped by the command), `--help` and `validate` of a task. It prints the medians
of wall time and of the child's CPU time (user + system) side by side, with the task's own duration
from its report (what the run spent between its flow run's start and end) and the load average.

Everything lives in a temporary folder: an agentenv home, a Prefect home (so the database is a new
one, never the user's), the example artifacts the task loads. The local server is stopped at the
end by `prefect-agentenv server stop`, which stops the PID the home recorded.

    .venv/bin/python benchmarks/cli_latency.py --runs 5 --out benchmarks/results/cli_latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).parent / "prefect-agentenv")
TASK = str(ROOT / "examples" / "env-roundtrip.json")


def _once(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, child CPU seconds and the finished process of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def _environment(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CI")}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), PREFECT_AGENTENV_HOME=str(folder / "agentenv"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_AGENTENV_SERVER="local")
    return env


def _prepare(env: dict[str, str], folder: Path) -> float:
    """Publish what the task loads, start the local server; the server's start in seconds."""
    for args in (["artifact", "put", "inbox", str(ROOT / "examples/artifacts/inbox.json"), "--environment", "email"],
                 ["artifact", "put", "verify-delivery", str(ROOT / "examples/artifacts/verify_delivery.py")]):
        subprocess.run([CLI, *args], env=env, cwd=folder, capture_output=True, check=True)
    wall, _, done = _once(["server", "start"], env, folder)
    if done.returncode != 0:
        raise SystemExit(f"the local server did not start: {done.stderr}")
    return wall


def _sides(folder: Path) -> dict[str, list[str]]:
    report = str(folder / "report.json")
    return {"run (local server)": ["run", TASK, "--report", report],
            "run --ephemeral": ["run", TASK, "--ephemeral", "--report", report],
            "--help": ["--help"],
            "validate task": ["validate", TASK]}


def measure(folder: Path, runs: int) -> dict[str, Any]:
    env = _environment(folder)
    server_start = _prepare(env, folder)
    sides = _sides(folder)
    samples: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name in sides}
    try:
        for i in range(runs + 1):  # round 0 warms the bytecode and the database; not counted
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for name in order:
                wall, cpu, done = _once(sides[name], env, folder)
                if done.returncode != 0:
                    raise SystemExit(f"{name} exited {done.returncode}: {done.stderr[-2000:]}")
                task = json.loads((folder / "report.json").read_text())["duration_s"] if "run" in name else None
                if i > 0:
                    samples[name].append((wall, cpu, task))
    finally:
        subprocess.run([CLI, "server", "stop"], env=env, cwd=folder, capture_output=True)
    result: dict[str, Any] = {"local server start (fresh database)": {"wall_s": round(server_start, 2)}}
    for name, rows in samples.items():
        result[name] = {"wall_median_s": round(statistics.median(r[0] for r in rows), 2),
                        "cpu_median_s": round(statistics.median(r[1] for r in rows), 2),
                        "wall_min_s": round(min(r[0] for r in rows), 2)}
        if rows[0][2] is not None:
            result[name]["task_median_s"] = round(statistics.median(float(r[2] or 0) for r in rows), 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    opts = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as tmp:
        result = measure(Path(tmp), opts.runs)
    load_end = os.getloadavg()
    report = {"commit": commit.strip(), "date": time.strftime("%Y-%m-%d"), "runs": opts.runs, "cpus": os.cpu_count(),
              "loadavg_start": load_start, "loadavg_end": load_end, "commands": result}
    print(f"commit {report['commit']}, {opts.runs} runs, load {load_start[0]:.2f} -> {load_end[0]:.2f} (1-min), "
          f"{os.cpu_count()} CPUs")
    print(f"{'command':<38} {'wall median':>11} {'wall min':>9} {'CPU median':>11} {'task':>7}")
    for name, row in result.items():
        if "wall_s" in row:
            print(f"{name:<38} {row['wall_s']:>10.2f}s")
            continue
        task = f"{row['task_median_s']:.2f}s" if "task_median_s" in row else "-"
        print(f"{name:<38} {row['wall_median_s']:>10.2f}s {row['wall_min_s']:>8.2f}s {row['cpu_median_s']:>10.2f}s "
              f"{task:>7}")
    if opts.out:
        opts.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
