"""Soak: run one task document many times back to back in one process and watch for leaks.

Each run is a real ``agent_task`` flow run (every step a Prefect task run) against a temporary
Prefect server, with real env, agent, judge and mock-model processes and verify scripts. After
every run the script records the process's RSS, open file descriptors, threads, asyncio tasks,
live child processes (all of them, and any carrying the run marker of a finished run), agent
sandboxes left on disk and the run's outcome. A leak shows as a column that grows with the run
number; "flat" means the last tenth of the runs is within a small margin of the second tenth.

    .venv/bin/python benchmarks/soak.py [--runs 200] [--task examples/tasks/reply-to-dana-scripted.json]
                                        [--out benchmarks/results/soak.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == me:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _marked(run_ids: set[str]) -> int:
    from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER

    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in env:
            if item.startswith(RUN_MARKER.encode() + b"=") and item.split(b"=", 1)[1].decode() in run_ids:
                count += 1
                break
    return count


async def soak(task_path: Path, runs: int, home: Path) -> list[dict[str, Any]]:
    from prefect_agentenv.demo import publish_example_artifacts
    from prefect_agentenv.documents import load_task
    from prefect_agentenv.flows.agent_task import agent_task

    publish_example_artifacts(ROOT / "examples")
    document = load_task(task_path)
    finished: set[str] = set()
    samples: list[dict[str, Any]] = []
    t_start = time.monotonic()
    for i in range(1, runs + 1):
        t0 = time.monotonic()
        state = await agent_task(document, return_state=True)
        data = await state.result(raise_on_failure=False)
        finished.add(str(data.get("flow_run_id")))
        gc.collect()
        samples.append({
            "run": i, "seconds": round(time.monotonic() - t0, 2), "outcome": data.get("outcome"),
            "rss_mb": round(_rss_mb(), 1), "fds": len(os.listdir("/proc/self/fd")),
            "threads": len(os.listdir("/proc/self/task")), "asyncio_tasks": len(asyncio.all_tasks()),
            "children": len(_children()), "marked_left": _marked(finished),
            "sandboxes_left": len(list((home / "runs").glob("*/sandboxes/*"))),
            "elapsed_s": round(time.monotonic() - t_start, 1),
            "steps_s": {st["id"]: st["duration_s"] for st in data.get("steps", [])},
        })
        if i % 10 == 0 or i == 1:
            print(json.dumps(samples[-1]), flush=True)
    return samples


def verdict(samples: list[dict[str, Any]]) -> dict[str, Any]:
    tenth = max(1, len(samples) // 10)
    early, late = samples[tenth:2 * tenth] or samples[:tenth], samples[-tenth:]

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    return {
        "runs": len(samples),
        "outcomes": {o: sum(1 for s in samples if s["outcome"] == o) for o in {s["outcome"] for s in samples}},
        "rss_mb_median_second_tenth": med(early, "rss_mb"), "rss_mb_median_last_tenth": med(late, "rss_mb"),
        "fds_second_tenth": med(early, "fds"), "fds_last_tenth": med(late, "fds"),
        "threads_second_tenth": med(early, "threads"), "threads_last_tenth": med(late, "threads"),
        "max_children_after_a_run": max(s["children"] for s in samples),
        "max_marked_processes_left": max(s["marked_left"] for s in samples),
        "max_sandboxes_left": max(s["sandboxes_left"] for s in samples),
        "seconds_per_run_median": med(samples, "seconds"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--task", type=Path, default=ROOT / "examples" / "tasks" / "reply-to-dana-scripted.json")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # The tag concurrency-limit lookups stall on a busy SQLite server (benchmarks/README.md).
    os.environ.setdefault("PREFECT_AGENTENV_TAG_TASK_RUNS", "false")
    with tempfile.TemporaryDirectory(prefix="agentenv-soak-") as tmp:
        home = Path(tmp)
        os.environ["PREFECT_AGENTENV_HOME"] = str(home)
        from prefect.testing.utilities import prefect_test_harness

        with prefect_test_harness(server_startup_timeout=120):
            samples = asyncio.run(soak(args.task, args.runs, home))
    result = {"python": platform.python_version(), "task": str(args.task.resolve().relative_to(ROOT)),
              "verdict": verdict(samples), "samples": samples}
    print(json.dumps(result["verdict"], indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
