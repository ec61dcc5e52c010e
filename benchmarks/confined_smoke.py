#!/usr/bin/env python
"""What confinement adds to a coding-agent harness: AgentEnv's smoke task of one harness run confined
(bubblewrap, the default) and unconfined (``PREFECT_AGENTENV_AGENT_CONFINEMENT=none``), side by side in
one invocation.

Per harness (installed by ``agent install``; ``--harnesses`` picks them), ``--reps`` rounds; each round
runs the harness's smoke task (run ``echo $((6 * 7))``, reply ``42``) once confined and once
unconfined, alternating which goes first, through ``run_task_document`` in this process without
Prefect (``execute_in_prefect=False, publish=False``), against the mock model the run serves. Each run
must pass with the answer ``42``, and its report must record the agent's ``confinement.mechanism`` as
``bwrap …`` (confined) or ``none`` (unconfined). Before the rounds, ``--warmup`` runs of each arm per
harness (default 1; not counted) warm the file cache and the checks a process makes once (bwrap's).

Timed per run: the wall time of ``run_task_document``, and from the report's ``steps`` the
``duration_s`` of the ``deploy_agent`` step (the wrapper's start until its card answers) and of the
``prompt_agent`` step (the prompt until the final reply); also ``teardown``, the sum of the report's
teardown records' durations (the run stops its instances together, so that sum is not a wall time:
the rest of a run's wall time is ``total − deploy − prompt``, from the samples). Printed and written:
per harness and arm the medians, and the medians of the differences confined − unconfined paired by
round, with the load average before and after and the bwrap version.

    .venv/bin/python benchmarks/confined_smoke.py --reps 7 --out benchmarks/results/confined_smoke.json
"""

from __future__ import annotations

import argparse
import asyncio
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
if "PREFECT_AGENTENV_HARNESS_DIR" not in os.environ and (ROOT / ".agentenv" / "harnesses").is_dir():
    os.environ["PREFECT_AGENTENV_HARNESS_DIR"] = str(ROOT / ".agentenv" / "harnesses")

from prefect_agentenv.agents.harnesses.installed import installed  # noqa: E402
from prefect_agentenv.documents import validate_file  # noqa: E402
from prefect_agentenv.flows.agent_task import run_task_document  # noqa: E402
from prefect_agentenv.runtime.confinement.bwrap import working_bwrap  # noqa: E402
from prefect_agentenv.settings import get_settings  # noqa: E402

SITE = sorted((ROOT / ".venv-peers" / "lib").glob("python3*/site-packages/agent_env"))
ARMS = {"confined": "confined", "unconfined": "none"}
"""Each arm and its ``PREFECT_AGENTENV_AGENT_CONFINEMENT``."""
PHASES = ("total", "deploy", "prompt", "teardown")


def smoke(name: str) -> Path:
    if not SITE:
        sys.exit("AgentEnv's smoke tasks come with the framework package: run `make peers`")
    return SITE[0] / "agents" / "tasks" / f"{name}-smoke.json"


async def one_run(name: str, arm: str) -> dict[str, Any]:
    """The smoke task once, in the arm's confinement: its phases' seconds and the confinement it recorded."""
    os.environ["PREFECT_AGENTENV_AGENT_CONFINEMENT"] = ARMS[arm]
    get_settings.cache_clear()
    task = validate_file(smoke(name)).raise_for_problems(name)
    started = time.perf_counter()
    report = await run_task_document(task, execute_in_prefect=False, publish=False)
    total = time.perf_counter() - started
    assert report.outcome == "PASSED", f"{name} {arm}: {report.outcome} {report.error}"
    (response,) = report.context.prompt_responses.values()
    assert response.response.strip() == "42", f"{name} {arm}: {response.response!r}"
    (agent,) = report.context.deployed_agents.values()
    mechanism = agent.confinement.mechanism if agent.confinement else "(not recorded)"
    wanted = "bwrap" if arm == "confined" else "none"
    assert mechanism.startswith(wanted), f"{name} {arm}: confinement.mechanism is {mechanism!r}"
    durations = {step.type: step.duration_s for step in report.steps}
    return {"total": total, "deploy": durations["deploy_agent"], "prompt": durations["prompt_agent"],
            "teardown": sum(record.duration_s for record in report.teardown), "mechanism": mechanism,
            "network": agent.confinement.network if agent.confinement else None}


def _paired_ms(confined: list[float], unconfined: list[float]) -> float:
    """The median of the per-round differences confined − unconfined, in ms (a round sees one load)."""
    return round(1000 * statistics.median(c - u for c, u in zip(confined, unconfined, strict=True)), 1)


def measure(harnesses: list[str], reps: int, warmup: int) -> dict[str, Any]:
    bwrap = working_bwrap()
    load_before = os.getloadavg()
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {arm: {phase: [] for phase in PHASES} for arm in ARMS} for name in harnesses}
    recorded: dict[str, dict[str, set[str]]] = {name: {arm: set() for arm in ARMS} for name in harnesses}
    firsts: dict[str, list[str]] = {name: [] for name in harnesses}
    with tempfile.TemporaryDirectory(prefix="confined-smoke-") as scratch:
        os.environ["PREFECT_AGENTENV_HOME"] = str(Path(scratch) / "home")
        for _ in range(warmup):
            for name in harnesses:
                for arm in ARMS:
                    asyncio.run(one_run(name, arm))
        for round_ in range(reps):
            for index, name in enumerate(harnesses):
                order = list(ARMS) if (round_ + index) % 2 == 0 else list(reversed(ARMS))
                firsts[name].append(order[0])
                for arm in order:
                    run = asyncio.run(one_run(name, arm))
                    for phase in PHASES:
                        samples[name][arm][phase].append(run[phase])
                    recorded[name][arm].add(f"{run['mechanism']}, network {run['network']}")
                    print(f"  round {round_ + 1} {name:12} {arm:10} total {run['total']:6.2f}s  deploy "
                          f"{run['deploy']:6.3f}s  prompt {run['prompt']:6.3f}s  ({run['mechanism']})", flush=True)
    os.environ.pop("PREFECT_AGENTENV_AGENT_CONFINEMENT", None)
    get_settings.cache_clear()
    load_after = os.getloadavg()
    medians = {name: {arm: {phase: round(statistics.median(values), 4) for phase, values in phases.items()}
                      for arm, phases in arms.items()} for name, arms in samples.items()}
    paired = {name: {phase: _paired_ms(arms["confined"][phase], arms["unconfined"][phase]) for phase in PHASES}
              for name, arms in samples.items()}
    spread = {name: {phase: [round(1000 * min(d), 1), round(1000 * max(d), 1)]
                     for phase in PHASES
                     for d in [[c - u for c, u in zip(arms["confined"][phase], arms["unconfined"][phase])]]}
              for name, arms in samples.items()}
    return {"bwrap": bwrap.version, "reps": reps, "warmup": warmup, "harnesses": harnesses,
            "load_average_before": load_before, "load_average_after": load_after, "cpus": os.cpu_count(),
            "python": platform.python_version(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "median_s": medians, "paired_difference_ms": paired, "paired_difference_range_ms": spread,
            "confinement_recorded": {name: {arm: sorted(values) for arm, values in arms.items()}
                                     for name, arms in recorded.items()},
            "first_arm": firsts, "samples_s": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harnesses", nargs="+", default=["pi", "claude-code"])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    missing = [name for name in args.harnesses if installed(name) is None]
    if missing:
        sys.exit(f"not installed: {', '.join(missing)} (prefect-agentenv agent install {' '.join(missing)})")
    result = measure(args.harnesses, args.reps, args.warmup)
    print(f"bwrap {result['bwrap']}, {args.reps} rounds, load before {result['load_average_before']}, "
          f"after {result['load_average_after']}")
    for name in args.harnesses:
        for arm in ARMS:
            row = result["median_s"][name][arm]
            print(f"{name:12} {arm:10} total {row['total']:6.2f}s  deploy {row['deploy'] * 1000:7.0f} ms  prompt "
                  f"{row['prompt'] * 1000:7.0f} ms  teardown {row['teardown'] * 1000:5.0f} ms  "
                  f"[{'; '.join(result['confinement_recorded'][name][arm])}]")
        diff, spread = result["paired_difference_ms"][name], result["paired_difference_range_ms"][name]
        print(f"{name:12} confined − unconfined, paired by round: "
              + "  ".join(f"{phase} {diff[phase]:+.0f} ms ({spread[phase][0]:+.0f}…{spread[phase][1]:+.0f})"
                          for phase in PHASES))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
