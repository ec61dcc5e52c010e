"""What confinement adds to an agent's deploy: one reference agent started confined and unconfined, side
by side in one invocation.

Each round starts the ``scripted`` reference agent once through the process launcher and once through
the confined launcher (alternating which goes first), each in a fresh sandbox, and times ``start()``:
from the launch until its A2A card answers, which is what a ``deploy_agent`` step waits for. Each is
stopped by its handle before the next start. The bwrap check the confined launcher makes once per
process is done before the rounds (a run makes it once). Also timed, as the floor of the difference:
``/bin/true`` run plainly and under the same bwrap argv. The medians (and the median of the
differences paired by round) are printed with the load average. (The CPU time of a confined agent
cannot be read this way: the processes of its PID namespace die with it, unreaped by this one.)

    .venv/bin/python benchmarks/confinement.py --rounds 15 --out benchmarks/results/confinement.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.runtime.bwrap import Layout, bwrap_argv, working_bwrap
from prefect_agentenv.runtime.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch import LaunchSpec
from prefect_agentenv.runtime.process import ProcessLauncher
from prefect_agentenv.runtime.sandbox import create_sandbox

CARD = "/.well-known/agent-card.json"


async def _deploy_seconds(launcher: ProcessLauncher, kind: str, folder: Path) -> float:
    """One start of the scripted agent until its card answers, in a fresh sandbox; stopped after."""
    sandbox = create_sandbox(folder, f"bench-{kind}")
    spec = LaunchSpec(command=REFERENCE_AGENTS["scripted"].command(), ready_path=CARD, kind=kind)
    started = time.perf_counter()
    instance = await launcher.start(spec, name=f"bench-{kind}", workdir=folder, cwd=sandbox.root,
                                    extra_env=sandbox.env())
    seconds = time.perf_counter() - started
    await launcher.stop(instance)
    sandbox.remove()
    return seconds


def _true_seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


async def measure(rounds: int) -> dict[str, Any]:
    """Interleaved rounds of both deploys, and of /bin/true plain and confined."""
    bwrap = working_bwrap()
    launchers = {"process": ProcessLauncher(run_id="bench"), "confined": ConfinedLauncher(run_id="bench")}
    times: dict[str, list[float]] = {"process": [], "confined": [], "true": [], "true confined": []}
    confined_true = bwrap_argv(bwrap.path, Layout(writable=()), ["/bin/true"])
    with tempfile.TemporaryDirectory(prefix="confinement-bench-") as tmp:
        folder = Path(tmp)
        await _deploy_seconds(launchers["process"], "process", folder)  # warm the interpreter's file cache
        for round_ in range(rounds):
            order = ["process", "confined"] if round_ % 2 == 0 else ["confined", "process"]
            for kind in order:
                times[kind].append(await _deploy_seconds(launchers[kind], kind, folder))
            times["true"].append(_true_seconds(["/bin/true"]))
            times["true confined"].append(_true_seconds(confined_true))
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"bwrap": bwrap.version, "rounds": rounds, "load_average": os.getloadavg(),
            "median_seconds": medians, "times": times,
            "deploy_overhead_ms": 1000 * (medians["confined"] - medians["process"]),
            "paired_overhead_ms": 1000 * statistics.median(c - p for c, p in zip(times["confined"], times["process"])),
            "bwrap_floor_ms": 1000 * (medians["true confined"] - medians["true"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args.rounds))
    medians = result["median_seconds"]
    print(f"bwrap {result['bwrap']}, {args.rounds} rounds, load {result['load_average']}")
    print(f"deploy, unconfined: {medians['process'] * 1000:.0f} ms   confined: {medians['confined'] * 1000:.0f} ms   "
          f"difference: {result['deploy_overhead_ms']:+.0f} ms (paired by round: {result['paired_overhead_ms']:+.0f} ms)")
    print(f"/bin/true, plain: {medians['true'] * 1000:.1f} ms   confined: {medians['true confined'] * 1000:.1f} ms   "
          f"difference: {result['bwrap_floor_ms']:+.1f} ms")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
