#!/usr/bin/env python
"""What the engine adds to a coding-agent harness: one AgentEnv smoke task through ``run`` against
the same prompt sent by hand to the same wrapper process.

Per harness (installed by ``agent install``; ``--harnesses`` picks them), interleaved, ``--reps``
times:

* ``run``    -- ``prefect-agentenv run <harness>-smoke.json`` from a fresh process (the CLI's start,
                Prefect's temporary server, deploy, prompt, verify, teardown, report).
* ``inproc`` -- the same document through ``run_task_document`` in this process, without Prefect
                (the engine's own cost, the mock model served by the run as usual).
* ``hand``   -- the floor: a mock model served in this process, the wrapper started with the very
                launch spec and variables a deploy gives it (``ProcessLauncher``, a fresh sandbox),
                its card read, one A2A 0.3 ``message/send`` with the smoke prompt, ``tasks/get``
                polled every 20 ms until the task ends, the wrapper stopped. ``hand_prompt`` is the
                prompt alone (send to final state) — what the harness and the model take.

Every mode checks the answer is ``42``. Wall times only; run on a quiet machine (the numbers go in
``benchmarks/results/harness_smoke.json`` with the machine's load printed beside them).

Usage::

    python benchmarks/harness_smoke.py [--harnesses opencode codex pi openhands] [--reps 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from prefect_agentenv.agents.harnesses.catalog import HARNESSES
from prefect_agentenv.agents.harnesses.endpoint import model_env
from prefect_agentenv.agents.harnesses.installed import installed, launch_spec
from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
from prefect_agentenv.documents import validate_file
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.resources.sandbox import create_sandbox
from prefect_agentenv.settings import get_settings

ROOT = Path(__file__).resolve().parents[1]
SITE = sorted((ROOT / ".venv-peers" / "lib").glob("python3*/site-packages/agent_env"))
PROMPT = "Run the shell command `echo $((6 * 7))` and reply with only the number it prints."
TERMINAL = {"completed", "failed", "canceled", "rejected"}


def smoke(name: str) -> Path:
    if not SITE:
        sys.exit("AgentEnv's smoke tasks come with the framework package: run `make peers`")
    return SITE[0] / "agents" / "tasks" / f"{name}-smoke.json"


def through_run(name: str, home: Path) -> float:
    report = home / f"{name}-{uuid.uuid4().hex[:6]}.json"
    env = {**os.environ, "PREFECT_AGENTENV_HOME": str(home)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "run", str(smoke(name)), "--report", str(report)],
                   env=env, check=True, capture_output=True, timeout=600)
    elapsed = time.perf_counter() - started
    answer = json.loads(report.read_text())["context"]["prompt_responses"]["ask"]["response"]
    assert answer.strip() == "42", answer
    return elapsed


async def in_process(name: str) -> float:
    task = validate_file(smoke(name)).raise_for_problems(name)
    started = time.perf_counter()
    report = await run_task_document(task, execute_in_prefect=False, publish=False)
    elapsed = time.perf_counter() - started
    assert report.outcome == "PASSED", report.error
    return elapsed


async def by_hand(name: str, workdir: Path) -> tuple[float, float]:
    """(launch to answer, prompt alone) for one prompt sent straight to the wrapper."""
    harness = HARNESSES[name]
    model = await serve_mock_model()
    launcher = ProcessLauncher()
    sandbox = create_sandbox(workdir, name)
    started = time.perf_counter()
    env = {**sandbox.env(), **model_env(harness, base_url=f"{model.base_url}/v1", api_key=None, model="mock")}
    instance = await launcher.start(launch_spec(harness), name=name, workdir=workdir, cwd=sandbox.root, extra_env=env)
    try:
        async with httpx.AsyncClient(base_url=instance.base_url, timeout=120, trust_env=False) as client:
            card = (await client.get("/.well-known/agent-card.json")).json()
            sent = time.perf_counter()
            answer = await _send(client, card.get("url", "/a2a"), PROMPT)
            prompt_only = time.perf_counter() - sent
    finally:
        await launcher.stop(instance)
        await model.stop()
        sandbox.remove()
    assert answer.strip() == "42", answer
    return time.perf_counter() - started, prompt_only


async def _send(client: httpx.AsyncClient, url: str, text: str) -> str:
    message = {"role": "user", "messageId": uuid.uuid4().hex, "kind": "message", "parts": [{"kind": "text", "text": text}]}
    reply = (await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                          "params": {"message": message}})).json()["result"]
    while reply.get("status", {}).get("state") not in TERMINAL:
        await asyncio.sleep(0.02)
        reply = (await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                              "params": {"id": reply["id"]}})).json()["result"]
    parts = reply["status"].get("message", {}).get("parts", [])
    return "".join(part.get("text", "") for part in parts if part.get("kind") == "text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harnesses", nargs="+", default=["opencode", "codex", "pi", "openhands"])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    missing = [name for name in args.harnesses if installed(name) is None]
    if missing:
        sys.exit(f"not installed: {', '.join(missing)} (prefect-agentenv agent install {' '.join(missing)})")
    times: dict[str, dict[str, list[float]]] = {n: {"run": [], "inproc": [], "hand": [], "hand_prompt": []}
                                                for n in args.harnesses}
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        home = Path(scratch)
        os.environ["PREFECT_AGENTENV_HOME"] = str(home / "home")
        get_settings.cache_clear()
        for _ in range(args.reps):
            for name in args.harnesses:
                times[name]["run"].append(through_run(name, home))
                times[name]["inproc"].append(asyncio.run(in_process(name)))
                whole, prompt = asyncio.run(by_hand(name, home / "hand"))
                times[name]["hand"].append(whole)
                times[name]["hand_prompt"].append(prompt)
    summary = {name: {mode: round(statistics.median(values), 3) for mode, values in modes.items()}
               for name, modes in times.items()}
    for name, row in summary.items():
        print(f"{name:10} run {row['run']:6.2f}s  inproc {row['inproc']:6.2f}s  hand {row['hand']:6.2f}s  "
              f"(prompt alone {row['hand_prompt']:.2f}s)")
    if args.json:
        record: dict[str, Any] = {"median_s": summary, "samples_s": times, "reps": args.reps,
                                  "load_average": os.getloadavg(), "cpus": os.cpu_count(),
                                  "python": platform.python_version(), "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
