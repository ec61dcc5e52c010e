#!/usr/bin/env python
"""What isolated scoring costs over shared scoring, with the Python agent API.

One rollout = the records env seeded from the clinic artifact, the scripted agent (it creates and
submits one prior-auth request), then scoring with an env_state_verifier and a response check.
``shared`` scores in the agent's env; ``isolated`` captures the env's state and the sandbox,
starts a fresh records env, restores the state into it and scores there. The modes alternate,
so machine load hits both alike. Recorded per mode: wall time of the whole rollout (median,
min, max) and the reward (must be 1.0 in both modes).

Usage::

    python benchmarks/scoring_placement.py [--reps 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN = {"tool_calls": [{"tool": "create_request", "arguments": {"patient_id": "P1", "cpt_code": "72148",
                                                                "status": "submitted"}}],
        "reply": "Submitted {tool_results[0][request_id]}."}
VERIFIERS = [
    {"type": "env_state_verifier", "verifier_id": "state",
     "assertions": [{"assert": "record-count", "id": "n", "resource": "requests",
                     "where": {"status": "submitted"}, "equals": 1}]},
    {"type": "agent_prompt_response_verifier", "verifier_id": "reply", "response_contains": ["Submitted"]},
]


async def one(mode: str) -> tuple[float, float | None]:
    from prefect_agentenv import AgentConfig, ScoringConfig, Task, TaskData, make_agent

    task = Task(TaskData(prompt="Submit the prior auth.", envs={"records": "clinic"}, verifiers=VERIFIERS))
    config = AgentConfig(agent="scripted", agent_config={"plan": PLAN}, scoring=ScoringConfig(mode=mode))
    t0 = time.perf_counter()
    async with make_agent(config) as agent:
        trace = await agent.run(task)
    return time.perf_counter() - t0, trace.reward


async def main(reps: int) -> dict[str, Any]:
    from prefect_agentenv.artifacts import get_artifact_store

    with get_artifact_store() as store:
        store.publish_environment("clinic", "records", "clinic.json", EXAMPLES / "artifacts" / "clinic.json")
    await one("shared")  # warm-up: imports, first process launches
    times: dict[str, list[float]] = {"shared": [], "isolated": []}
    rewards: dict[str, list[float | None]] = {"shared": [], "isolated": []}
    for _ in range(reps):
        for mode in ("shared", "isolated"):
            seconds, reward = await one(mode)
            times[mode].append(seconds)
            rewards[mode].append(reward)
    return {mode: {"median_s": round(statistics.median(t), 3), "min_s": round(min(t), 3),
                   "max_s": round(max(t), 3), "rewards": rewards[mode]} for mode, t in times.items()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_AGENTENV_HOME", tempfile.mkdtemp(prefix="scoring-bench-"))
    result = {"reps": args.reps, "load_average_at_start": os.getloadavg()[0], **asyncio.run(main(args.reps))}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
