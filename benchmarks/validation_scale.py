"""How long ``validate`` takes, and how much memory it needs, on documents of thousands of steps.

Shapes (N steps each): ``implicit`` (``depends_on`` omitted everywhere: one deploy_env, one
deploy_agent, then prompt_agent steps), ``chain`` (each step depends on the one before it) and
``fanout`` (every prompt depends on the agent only). Each case runs in a fresh interpreter so
its peak RSS (``ru_maxrss``) is its own.

    .venv/bin/python benchmarks/validation_scale.py [--sizes 2000 5000] [--out benchmarks/results/validation_scale.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def document(shape: str, n: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"id": "env", "type": "deploy_env", "env_id": "email"},
        {"id": "agent", "type": "deploy_agent", "agent_name": "a", "a2a_agent_id": "scripted", "env_ids": ["email"]},
    ]
    for i in range(n - 2):
        step: dict[str, Any] = {"id": f"p{i}", "type": "prompt_agent", "agent_name": "a", "prompt_id": f"p{i}",
                                "prompt": "hello"}
        if shape == "chain":
            step["depends_on"] = [steps[-1]["id"]]
        elif shape == "fanout":
            step["depends_on"] = ["agent"]
        steps.append(step)
    return steps


def measure(shape: str, n: int) -> dict[str, Any]:
    from prefect_agentenv.documents import validate_data

    data = document(shape, n)
    start = time.perf_counter()
    result = validate_data(data)
    seconds = time.perf_counter() - start
    errors = [p.render() for p in result.problems][:3]
    return {"shape": shape, "steps": n, "seconds": round(seconds, 3), "ok": result.ok, "errors": errors,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000])
    parser.add_argument("--shapes", nargs="+", default=["implicit", "chain", "fanout"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--one", nargs=2, metavar=("SHAPE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]))))
        return
    rows = []
    for n in args.sizes:
        for shape in args.shapes:
            out = subprocess.run([sys.executable, __file__, "--one", shape, str(n)], capture_output=True, text=True,
                                 check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]))
    if args.out:
        args.out.write_text(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                                        "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
