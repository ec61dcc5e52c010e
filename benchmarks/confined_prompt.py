"""What confinement adds to one prompt of a coding-agent harness, seen to 5 ms: the smoke prompt sent by
hand to the harness's wrapper started unconfined, confined with the host's network, and confined with
its own (the default), several prompts per start.

``confined_smoke.py`` times the ``prompt_agent`` step, which sees an answer only at the A2A client's
growing poll intervals; here the wrapper is started with the launch spec a deploy gives it (the
``process`` launcher, or the ``confined`` one with its model door, with ``network: public`` or not),
its card read, and ``--prompts`` prompts sent one after the other (``message/send``, then
``tasks/get`` every 5 ms), so the first prompt (the harness's first model call and first shell) and
the later ones are told apart, and the bridge's share (own network against the host's) from
bubblewrap's. Rounds rotate which arm goes first; a fresh mock model and sandbox each start.

    .venv/bin/python benchmarks/confined_prompt.py --harnesses pi claude-code --rounds 6 --prompts 4 \
        --out benchmarks/results/confined_prompt.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from prefect_agentenv.agents.harnesses.catalog import HARNESSES
from prefect_agentenv.agents.harnesses.endpoint import model_env
from prefect_agentenv.agents.harnesses.installed import launch_spec
from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
from prefect_agentenv.runtime.confinement.bwrap import working_bwrap
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch.base import Door
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.resources.sandbox import create_sandbox

sys.path.insert(0, str(Path(__file__).parent))
from harness_smoke import PROMPT, TERMINAL  # noqa: E402  (the same prompt)

ARMS = ("unconfined", "confined, host network", "confined")
POLL_SECONDS = 0.005


async def _send(client: httpx.AsyncClient, url: str, text: str) -> str:
    """One prompt: ``message/send``, then ``tasks/get`` every 5 ms until the task ends; its text."""
    message = {"role": "user", "messageId": uuid.uuid4().hex, "kind": "message", "parts": [{"kind": "text", "text": text}]}
    reply = (await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                          "params": {"message": message}})).json()["result"]
    while reply.get("status", {}).get("state") not in TERMINAL:
        await asyncio.sleep(POLL_SECONDS)
        reply = (await client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                              "params": {"id": reply["id"]}})).json()["result"]
    parts = reply["status"].get("message", {}).get("parts", [])
    return "".join(part.get("text", "") for part in parts if part.get("kind") == "text")


async def prompts(name: str, arm: str, count: int, workdir: Path) -> list[float]:
    """Seconds of each of ``count`` prompts to one start of the wrapper."""
    harness = HARNESSES[name]
    model = await serve_mock_model()
    sandbox = create_sandbox(workdir, name)
    env = {**sandbox.env(), **model_env(harness, base_url=f"{model.base_url}/v1", api_key=None, model="mock")}
    spec = launch_spec(harness)
    launcher: ProcessLauncher = ProcessLauncher()
    if arm != "unconfined":
        network = {"network": "public"} if arm == "confined, host network" else {}
        spec = spec.model_copy(update={"kind": "confined", "doors": (Door.from_url("model", model.base_url),),
                                       **network})
        launcher = ConfinedLauncher()
    instance = await launcher.start(spec, name=name, workdir=workdir, cwd=sandbox.root, extra_env=env)
    seconds = []
    try:
        async with httpx.AsyncClient(base_url=instance.base_url, timeout=120, trust_env=False) as client:
            url = (await client.get("/.well-known/agent-card.json")).json().get("url", "/a2a")
            for _ in range(count):
                started = time.perf_counter()
                answer = await _send(client, url, PROMPT)
                seconds.append(time.perf_counter() - started)
                assert answer.strip() == "42", answer
    finally:
        await launcher.stop(instance)
        await model.stop()
        sandbox.remove()
    return seconds


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000)


async def measure(harnesses: list[str], rounds: int, count: int) -> dict[str, object]:
    found: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in harnesses:
            seen: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
            for i in range(rounds):
                for arm in (*ARMS[i % 3:], *ARMS[:i % 3]):
                    seen[arm].append(await prompts(name, arm, count, Path(folder)))
            found[name] = {arm: {"first_prompt_ms": _ms([s[0] for s in runs]),
                                 "later_prompts_ms": _ms([x for s in runs for x in s[1:]]), "samples_s": runs}
                           for arm, runs in seen.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harnesses", nargs="+", default=["pi", "claude-code"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load = os.getloadavg()
    result = {"bwrap": working_bwrap().version, "rounds": args.rounds, "prompts": args.prompts,
              "load_before": [round(x, 2) for x in load],
              "harnesses": asyncio.run(measure(args.harnesses, args.rounds, args.prompts)),
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    for name, arms in result["harnesses"].items():  # type: ignore[attr-defined]
        for arm in ARMS:
            print(f"{name:12} {arm:22} first prompt {arms[arm]['first_prompt_ms']:5} ms  later prompts "
                  f"{arms[arm]['later_prompts_ms']:5} ms")
    print(f"load before {result['load_before']}, after {result['load_after']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
