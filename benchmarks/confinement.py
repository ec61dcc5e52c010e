"""What confinement adds to an agent's deploy: one reference agent started confined and unconfined, side
by side in one invocation.

Each round starts the ``scripted`` reference agent through the process launcher, through the confined
launcher with the host's network (``network: public``), confined with a network of its own (the
default: a namespace bridged to its doors, here one model door) and that last one again without a
cgroup of its own (rlimits only, as before agents had one; where no cgroup can be made the two are the
same), rotating which goes first, each in a fresh sandbox, and times ``start()``:
from the launch until its A2A card answers, which is what a ``deploy_agent`` step waits for. Each is
stopped by its handle before the next start. The bwrap check the confined launcher makes once per
process is done before the rounds (a run makes it once). Also timed, as the floor of the difference:
``/bin/true`` run plainly, under the same bwrap argv, and so in a cgroup made for it (made, joined
before bwrap, removed: what a deploy and its stop add). The medians (and the median of the
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
from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
from prefect_agentenv.runtime.confinement import cgroups
from prefect_agentenv.runtime.confinement.bwrap import Layout, bwrap_argv, check_network_namespace, working_bwrap
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch.base import Door, LaunchSpec
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.resources.sandbox import create_sandbox

CARD = "/.well-known/agent-card.json"


VARIANTS: dict[str, dict[str, Any]] = {
    "process": {"kind": "process"},
    "confined, host network": {"kind": "confined", "network": "public"},
    "confined": {"kind": "confined"},
    "confined, no cgroup": {"kind": "confined"},
}
"""What each arm starts: the launcher and the network (the last one's launcher makes no cgroup)."""


class _RlimitsOnly(ConfinedLauncher):
    """The confined launcher without an agent cgroup: the baseline of what the cgroup adds."""

    agent_cgroups = False


async def _deploy_seconds(launcher: ProcessLauncher, variant: str, folder: Path, model_url: str) -> float:
    """One start of the scripted agent until its card answers, in a fresh sandbox; stopped after."""
    sandbox = create_sandbox(folder, "bench")
    fields = VARIANTS[variant]
    doors = (Door.from_url("model", model_url),) if fields["kind"] == "confined" else ()
    spec = LaunchSpec(command=REFERENCE_AGENTS["scripted"].command(), ready_path=CARD, doors=doors, **fields)
    started = time.perf_counter()
    instance = await launcher.start(spec, name="bench", workdir=folder, cwd=sandbox.root,
                                    extra_env=sandbox.env())
    seconds = time.perf_counter() - started
    await launcher.stop(instance)
    sandbox.remove()
    return seconds


def _true_in_cgroup_seconds(argv: list[str], round_: int) -> float:
    """``/bin/true`` under bwrap in a cgroup of its own: made, joined before bwrap, removed (as a deploy and its
    stop do); plain bwrap where no cgroup can be made."""
    started = time.perf_counter()
    cgroup = cgroups.create(f"bench-{os.getpid()}-{round_}", processes=64, memory_mb=256)
    joined = cgroups.join_argv(cgroup) if cgroup is not None else []
    subprocess.run([*joined, *argv], check=True, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    if cgroup is not None:
        cgroup.remove()
    return time.perf_counter() - started


def _true_seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


async def measure(rounds: int) -> dict[str, Any]:
    """Interleaved rounds of both deploys, and of /bin/true plain and confined."""
    bwrap = working_bwrap()
    confined = ConfinedLauncher(run_id="bench")
    launchers = {"process": ProcessLauncher(run_id="bench"), "confined, host network": confined, "confined": confined,
                 "confined, no cgroup": _RlimitsOnly(run_id="bench")}
    times: dict[str, list[float]] = {**{variant: [] for variant in VARIANTS}, "true": [], "true confined": [],
                                     "true confined, cgroup": []}
    confined_true = bwrap_argv(bwrap.path, Layout(writable=()), ["/bin/true"])
    check_network_namespace(bwrap.path)
    model = await serve_mock_model()
    model_url = f"{model.base_url}/v1"
    try:
        with tempfile.TemporaryDirectory(prefix="confinement-bench-") as tmp:
            folder = Path(tmp)
            await _deploy_seconds(launchers["process"], "process", folder, model_url)  # warm the file cache
            for round_ in range(rounds):
                order = list(VARIANTS)[round_ % len(VARIANTS):] + list(VARIANTS)[:round_ % len(VARIANTS)]
                for variant in order:
                    times[variant].append(await _deploy_seconds(launchers[variant], variant, folder, model_url))
                times["true"].append(_true_seconds(["/bin/true"]))
                times["true confined"].append(_true_seconds(confined_true))
                times["true confined, cgroup"].append(_true_in_cgroup_seconds(confined_true, round_))
    finally:
        await model.stop()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"bwrap": bwrap.version, "rounds": rounds, "cgroup": getattr(cgroups.find_hierarchy(), "version", None), "load_average": os.getloadavg(),
            "median_seconds": medians, "times": times,
            "deploy_overhead_ms": 1000 * (medians["confined"] - medians["process"]),
            "paired_overhead_ms": _paired_ms(times, "confined", "process"),
            "network_paired_overhead_ms": _paired_ms(times, "confined", "confined, host network"),
            "cgroup_paired_overhead_ms": _paired_ms(times, "confined", "confined, no cgroup"),
            "cgroup_floor_ms": 1000 * (medians["true confined, cgroup"] - medians["true confined"]),
            "bwrap_floor_ms": 1000 * (medians["true confined"] - medians["true"])}


def _paired_ms(times: dict[str, list[float]], slower: str, faster: str) -> float:
    """The median of the per-round differences, in ms (rounds see the same load)."""
    return 1000 * statistics.median(s - f for s, f in zip(times[slower], times[faster], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args.rounds))
    medians = result["median_seconds"]
    print(f"bwrap {result['bwrap']}, cgroup {result['cgroup'] or 'none'}, {args.rounds} rounds, "
          f"load {result['load_average']}")
    print(f"deploy, unconfined: {medians['process'] * 1000:.0f} ms   confined with the host's network: "
          f"{medians['confined, host network'] * 1000:.0f} ms   confined: {medians['confined'] * 1000:.0f} ms")
    print(f"confined against unconfined: {result['deploy_overhead_ms']:+.0f} ms (paired by round: "
          f"{result['paired_overhead_ms']:+.0f} ms); its own network against the host's, paired: "
          f"{result['network_paired_overhead_ms']:+.0f} ms")
    print(f"with its cgroup against rlimits only: {medians['confined, no cgroup'] * 1000:.0f} ms without, paired: "
          f"{result['cgroup_paired_overhead_ms']:+.0f} ms")
    print(f"/bin/true, plain: {medians['true'] * 1000:.1f} ms   confined: {medians['true confined'] * 1000:.1f} ms   "
          f"difference: {result['bwrap_floor_ms']:+.1f} ms   in a cgroup made and removed for it: "
          f"{medians['true confined, cgroup'] * 1000:.1f} ms ({result['cgroup_floor_ms']:+.1f} ms)")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
