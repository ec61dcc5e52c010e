"""Helper of harbor_tasks.py: trials of each harness (on the mock model) and of the oracle on the task
shell-in-environment, one warm-up each first; the median of each phase and every score.

    PREFECT_AGENTENV_HARNESS_DIR=.agentenv/harnesses .venv/bin/python benchmarks/_harbor_harness_trials.py \
        [--trials 3] [pi codex opencode claude-code openhands llm ...]  (any agent id; the oracle last)
"""
import argparse
import asyncio
import statistics
import sys

sys.path.insert(0, "benchmarks")
from harbor_tasks import ROOT, trial  # noqa: E402

TASK = ROOT / "examples" / "harbor" / "dataset" / "shell-in-environment"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("agents", nargs="*", default=["pi", "codex", "opencode", "claude-code", "openhands"])
    args = parser.parse_args()
    for agent in [*args.agents, "oracle"]:
        await trial(TASK, agent)
        rows = [await trial(TASK, agent) for _ in range(args.trials)]
        print(agent, {k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0] if k.endswith("_s")},
              [r["score"] for r in rows], flush=True)


if __name__ == "__main__":
    asyncio.run(main())
