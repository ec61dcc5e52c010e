"""What confinement adds to one prompt of a coding-agent harness, seen to 20 ms: the smoke prompt sent by
hand to the harness's wrapper started confined and unconfined, several prompts per start.

``confined_smoke.py`` times the ``prompt_agent`` step, which sees an answer only at the A2A client's
growing poll intervals; here the wrapper is started with the launch spec a deploy gives it (the
``confined`` launcher with its model door, or the ``process`` launcher), its card read, and
``--prompts`` prompts sent one after the other (``message/send``, then ``tasks/get`` every 20 ms),
so the first prompt (the harness's first model call and first shell) and the later ones are told
apart. Rounds alternate which arm goes first; a fresh mock model and sandbox each start.

    .venv/bin/python benchmarks/confined_prompt.py --harnesses pi claude-code --rounds 5 --prompts 3 \
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
from pathlib import Path

import httpx

from prefect_agentenv.agents.harnesses.catalog import HARNESSES
from prefect_agentenv.agents.harnesses.endpoint import model_env
from prefect_agentenv.agents.harnesses.installed import launch_spec
from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
from prefect_agentenv.runtime.bwrap import working_bwrap
from prefect_agentenv.runtime.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch import Door
from prefect_agentenv.runtime.process import ProcessLauncher
from prefect_agentenv.runtime.sandbox import create_sandbox

sys.path.insert(0, str(Path(__file__).parent))
from harness_smoke import PROMPT, _send  # noqa: E402  (the same prompt and the same 20 ms polling)


async def prompts(name: str, confined: bool, count: int, workdir: Path) -> list[float]:
    """Seconds of each of ``count`` prompts to one start of the wrapper."""
    harness = HARNESSES[name]
    model = await serve_mock_model()
    sandbox = create_sandbox(workdir, name)
    env = {**sandbox.env(), **model_env(harness, base_url=f"{model.base_url}/v1", api_key=None, model="mock")}
    spec = launch_spec(harness)
    launcher: ProcessLauncher = ProcessLauncher()
    if confined:
        spec = spec.model_copy(update={"kind": "confined", "doors": (Door.from_url("model", model.base_url),)})
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
            seen: dict[bool, list[list[float]]] = {True: [], False: []}
            for i in range(rounds):
                for confined in ((False, True) if i % 2 == 0 else (True, False)):
                    seen[confined].append(await prompts(name, confined, count, Path(folder)))
            found[name] = {("confined" if arm else "unconfined"): {
                "first_prompt_ms": _ms([s[0] for s in runs]), "later_prompts_ms": _ms([x for s in runs for x in s[1:]]),
                "samples_s": runs} for arm, runs in seen.items()}
            pairs = zip(seen[True], seen[False], strict=True)
            found[name]["paired_first_ms"] = _ms([c[0] - u[0] for c, u in pairs])  # type: ignore[index]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harnesses", nargs="+", default=["pi", "claude-code"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load = os.getloadavg()
    result = {"bwrap": working_bwrap().version, "rounds": args.rounds, "prompts": args.prompts,
              "load_before": [round(x, 2) for x in load],
              "harnesses": asyncio.run(measure(args.harnesses, args.rounds, args.prompts)),
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    for name, arms in result["harnesses"].items():  # type: ignore[attr-defined]
        for arm in ("unconfined", "confined"):
            print(f"{name:12} {arm:10} first prompt {arms[arm]['first_prompt_ms']:5} ms  later prompts "
                  f"{arms[arm]['later_prompts_ms']:5} ms")
        print(f"{name:12} first prompt, confined − unconfined paired by round: {arms['paired_first_ms']:+} ms")
    print(f"load before {result['load_before']}, after {result['load_after']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
