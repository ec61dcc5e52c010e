"""What a Harbor task costs per trial above its own work, cached against fresh builds, and over a dataset.

Three measurements, on the local docker daemon (`make docker-up`) and the example task
examples/harbor/dataset/hello-world (its solve.sh and test.sh take milliseconds, so what is measured is
the runner's overhead):

1. per phase of one trial, median of N: the environment step (image lookup + container start), the
   oracle's step, the verifier's step; the engine runs in this process, without Prefect task runs;
2. the environment step with the image built fresh (a new RUN layer) against cached;
3. a dataset of D copies of the task (each its own folder and name, so each its own image tag) run with
   at most C at once: the wall time, and each trial's phases.

    .venv/bin/python benchmarks/harbor_tasks.py [--trials 7] [--dataset 50] [--concurrency 4]

Writes benchmarks/results/harbor_tasks.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from prefect_agentenv.documents import validate_file
from prefect_agentenv.flows.task_runner import run_task_document

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "examples" / "harbor" / "dataset" / "hello-world"
RESULTS = ROOT / "benchmarks" / "results" / "harbor_tasks.json"


async def trial(folder: Path, agent: str = "oracle") -> dict[str, Any]:
    """One trial: its wall time, its score and each step's duration."""
    result = validate_file(folder)
    assert result.ok and result.document is not None, [p.render() for p in result.problems]
    started = time.monotonic()
    report = await run_task_document(result.document, overrides={"a2a_agent_id": agent}, execute_in_prefect=False,
                                     publish=False)
    wall = time.monotonic() - started
    phases = {s.id: s.duration_s for s in report.steps}
    score = report.context.metadata.verifications["verifier"].score
    return {"wall_s": wall, "score": score, "error": report.error, **{f"{k}_s": v for k, v in phases.items()}}


def medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k in rows[0] if k.endswith("_s")]
    return {k: round(statistics.median(r[k] for r in rows if r.get(k) is not None), 3) for k in keys}


def image_tags(prefix: str) -> list[str]:
    out = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", prefix], capture_output=True,
                         text=True, check=True).stdout.split()
    return out


async def fresh_vs_cached(trials: int) -> dict[str, Any]:
    """Each trial on a new copy of the task whose Dockerfile ends in a RUN line of its own (a new tag and a
    layer docker must build: a fresh build of a small environment), then the same copy again (cached)."""
    fresh, cached = [], []
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="harbor-fresh-") as scratch:
            folder = Path(scratch) / "hello-fresh"
            shutil.copytree(TASK, folder)
            dockerfile = folder / "environment" / "Dockerfile"
            dockerfile.write_text(dockerfile.read_text() + f"RUN echo {uuid.uuid4().hex} > /build-nonce\n")
            toml = folder / "task.toml"
            toml.write_text(toml.read_text().replace("agentenv-examples/hello-world", "bench/hello-fresh"))
            fresh.append(await trial(folder))
            cached.append(await trial(folder))
        for tag in image_tags("agentenv-harbor/hello-fresh"):
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
    return {"fresh": medians(fresh), "cached": medians(cached)}


async def dataset(size: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="harbor-dataset-") as scratch:
        folders = []
        for i in range(size):
            folder = Path(scratch) / f"hello-{i:03d}"
            shutil.copytree(TASK, folder)
            toml = folder / "task.toml"
            toml.write_text(toml.read_text().replace("agentenv-examples/hello-world", f"bench/hello-{i:03d}"))
            folders.append(folder)
        gate = asyncio.Semaphore(concurrency)

        async def one(folder: Path) -> dict[str, Any]:
            async with gate:
                return await trial(folder)

        started = time.monotonic()
        first = await asyncio.gather(*(one(f) for f in folders))
        first_wall = time.monotonic() - started
        started = time.monotonic()
        second = await asyncio.gather(*(one(f) for f in folders))
        second_wall = time.monotonic() - started
    for i in range(size):
        for tag in image_tags(f"agentenv-harbor/hello-{i:03d}"):
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
    return {"size": size, "concurrency": concurrency,
            "first_run": {"wall_s": round(first_wall, 2), "passed": sum(r["score"] == 1.0 for r in first),
                          "errors": sum(r["error"] is not None for r in first), "median": medians(first)},
            "cached_rerun": {"wall_s": round(second_wall, 2), "passed": sum(r["score"] == 1.0 for r in second),
                             "errors": sum(r["error"] is not None for r in second), "median": medians(second)}}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--dataset", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    await trial(TASK)  # warm: image built, imports done
    per_trial = medians([await trial(TASK) for _ in range(args.trials)])
    nop = medians([await trial(TASK, "nop") for _ in range(args.trials)])
    out = {"per_trial_oracle": per_trial, "per_trial_nop": nop,
           "build": await fresh_vs_cached(max(1, args.trials // 2)),
           "dataset": await dataset(args.dataset, args.concurrency)}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
