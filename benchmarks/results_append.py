"""What appending a benchmark's results costs the flow process, in place against rewritten whole.

A benchmark appends one line to its run's ``results.jsonl`` per finished task run. On a local
store the line is now appended in place; before, and still on an object store, the whole file was
read and written back with the line at its end. This script appends N realistic result lines
(a seed, collected files, a setup fingerprint, axis scores: ~1.8 KB each) through ``ResultsStore.append`` to a
temporary local store from C coroutines at once (``append_async``: a thread each, as a benchmark's
task runs do), once per way, each in a fresh process (so one's heap does not colour the
other's), and records the wall time and the process's resident memory (``VmRSS``) every N/10
results: the slope, fitted after the first tenth, is the growth per task run.

    .venv/bin/python benchmarks/results_append.py [--runs 1000] [--reps 3] [--concurrency 32]

Results go to ``benchmarks/results/results_append.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "results_append.txt"
MODES = ("in-place", "rewrite")


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _result(i: int):  # type: ignore[no-untyped-def]
    from prefect_agentenv.results.rows import (
        AgentSetup,
        SetupFingerprint,
        TaskResult,
    )

    return TaskResult.model_validate({
        "task_id": "reply-to-dana", "seed_index": i % 4, "seed": {"sender": f"dana{i % 4}@example.com"},
        "epoch": i // 4, "tags": ["email", "nightly"], "status": "completed", "outcome": "PASSED",
        "score": 1.0, "duration_s": 6.2, "report_url": f"file:///runs/nightly/run/tasks/{i:05d}/report.json",
        "flow_run_id": "6f1c2d3e-0000-4000-8000-%012d" % i,
        "axis_scores": {"correctness": 1.0, "safety": 1.0},
        "files": {f"out-{k}.txt": f"file:///runs/nightly/run/tasks/{i:05d}/files/out-{k}.txt" for k in range(4)},
        "started_at": "2026-12-03T01:00:00+00:00", "finished_at": "2026-12-03T01:00:06+00:00",
        "setup": SetupFingerprint(benchmark="nightly", benchmark_version="3", package_version="0.9.0",
                                  agents=[AgentSetup(name="agent", agent_id="scripted", version="1.0.0",
                                                     model="mock")],
                                  models=["mock"], judge_models=["mock"],
                                  overrides={f"key{k}": "sha256:" + "ab" * 32 for k in range(8)}),
    })


def one(mode: str, runs: int, concurrency: int) -> dict[str, object]:
    """Append ``runs`` results one way in this process, as a benchmark does; RSS every tenth."""
    from prefect_agentenv.artifacts.local import LocalArtifactBackend
    from prefect_agentenv.artifacts.store import ArtifactBackend
    from prefect_agentenv.results.store.run_store import ResultsStore

    class Rewriting(LocalArtifactBackend):
        _append = ArtifactBackend._append  # the read-modify-write an object store does

    async def append_all(store: ResultsStore, samples: list[tuple[int, int]]) -> None:
        queue = list(range(runs))
        done = 0

        async def worker() -> None:  # the task runs' results, appended as they finish
            nonlocal done
            while queue:
                await store.append_async(_result(queue.pop()))
                done += 1
                if done % max(1, runs // 10) == 0:
                    samples.append((done, _rss_kb()))

        await asyncio.gather(*(worker() for _ in range(concurrency)))

    with tempfile.TemporaryDirectory(prefix="results-append-") as root:
        backend = (LocalArtifactBackend if mode == "in-place" else Rewriting)(root)
        store = ResultsStore(backend, "nightly", "run")
        samples: list[tuple[int, int]] = [(0, _rss_kb())]
        started = time.perf_counter()
        asyncio.run(append_all(store, samples))
        wall = time.perf_counter() - started
        size = len(backend.get_object(store.results_key))
    return {"mode": mode, "wall_s": wall, "bytes": size, "samples": samples}


def _slope(samples: list[tuple[int, int]], runs: int) -> float:
    points = [(n, kb) for n, kb in samples if n >= runs // 10]
    return statistics.linear_regression([n for n, _ in points], [kb for _, kb in points]).slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.runs, args.concurrency)))
        return
    measured: dict[str, list[dict[str, object]]] = {mode: [] for mode in MODES}
    for _ in range(args.reps):  # interleaved, a fresh process each
        for mode in MODES:
            out = subprocess.run([sys.executable, __file__, "--one", mode, "--runs", str(args.runs),
                                  "--concurrency", str(args.concurrency)],
                                 check=True, capture_output=True, text=True).stdout
            measured[mode].append(json.loads(out))
    lines = [f"results_append — {platform.python_version()}, {platform.machine()}, {args.runs} results, "
             f"{args.concurrency} appending at once, median of {args.reps} fresh processes per way, interleaved", ""]
    for mode in MODES:
        reps = measured[mode]
        wall = statistics.median(float(r["wall_s"]) for r in reps)  # type: ignore[arg-type]
        slope = statistics.median(_slope(r["samples"], args.runs) for r in reps)  # type: ignore[arg-type]
        first, last = reps[0]["samples"][1], reps[0]["samples"][-1]  # type: ignore[index]
        lines.append(f"{mode:>8}: {wall * 1000:8.1f} ms for {args.runs} appends "
                     f"({wall / args.runs * 1000:.2f} ms each), RSS {slope:6.2f} KB per result "
                     f"(first run: {first[1] / 1024:.1f} MB at {first[0]}, {last[1] / 1024:.1f} MB at {last[0]}), "
                     f"file {int(reps[0]['bytes']) / 1e6:.2f} MB")  # type: ignore[arg-type]
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
