"""What grading apart costs: one ``verify_sandbox``-style command run in the agent's live sandbox (as
before grading had a box of its own) and in a fresh confined copy of it, side by side in one invocation.

The sandbox is a small project as a coding agent leaves one: ``--files`` Python files of
``--file-kb`` each under ``/app`` (a package, its tests), plus a harness's home that the box leaves
out. Each round runs ``python -c 'import solution'`` in ``/app``:

* **live**: a plain process in the sandbox folder with the runner's environment (``run_bounded``);
* **box**: :func:`open_box` (the copy, the set-aside pass, the bwrap check the runner makes once),
  the command under bwrap with no network, then the copy removed; each phase timed.

The order rotates by round. Medians, the median of the differences paired by round, and the load
average are printed (and written with ``--out``).

    .venv/bin/python benchmarks/grading_box.py --rounds 21 --out benchmarks/results/grading_box.json
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

from prefect_agentenv.runtime.confinement.bwrap import working_bwrap
from prefect_agentenv.runtime.confinement.grading_box import open_box
from prefect_agentenv.runtime.launch.command import run_bounded
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox

COMMAND = [sys.executable, "-c", "import solution"]


def _project(folder: Path, files: int, file_kb: int) -> Sandbox:
    sandbox = create_sandbox(folder, "bench")
    app = sandbox.root / "app"
    (app / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    body = ("# " + "x" * 77 + "\n") * (file_kb * 1024 // 80)
    for i in range(files):
        module = app / "pkg" / f"sub{i % 10}" / f"mod{i}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(body)
    (sandbox.home / ".cache").mkdir()
    (sandbox.home / ".cache" / "big.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    return sandbox


async def _live(sandbox: Sandbox) -> dict[str, float]:
    started = time.perf_counter()
    done = await run_bounded(COMMAND, cwd=sandbox.root / "app", env={**os.environ, **sandbox.env()}, timeout=60)
    assert done.returncode == 0, done.stderr
    return {"total": time.perf_counter() - started}


async def _box(sandbox: Sandbox, folder: Path) -> dict[str, float]:
    started = time.perf_counter()
    box = open_box(sandbox, folder)
    copied = time.perf_counter()
    done = await box.run(COMMAND, cwd="/app", env={}, run_id="bench", timeout=60, max_output_bytes=4096)
    ran = time.perf_counter()
    assert done.returncode == 0, done.stderr
    box.remove()
    ended = time.perf_counter()
    return {"copy": copied - started, "run": ran - copied, "remove": ended - ran, "total": ended - started}


async def _rounds(rounds: int, files: int, file_kb: int) -> dict[str, list[dict[str, float]]]:
    working_bwrap()  # the check a run makes once
    seen: dict[str, list[dict[str, float]]] = {"live": [], "box": []}
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = _project(Path(tmp) / "run", files, file_kb)
        for i in range(rounds):
            for arm in (("live", "box") if i % 2 == 0 else ("box", "live")):
                seen[arm].append(await (_live(sandbox) if arm == "live" else _box(sandbox, Path(tmp) / "grading")))
    return seen


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--file-kb", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load = os.getloadavg()
    seen = asyncio.run(_rounds(args.rounds, args.files, args.file_kb))
    result = {
        "rounds": args.rounds, "files": args.files, "file_kb": args.file_kb, "bwrap": working_bwrap().version,
        "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()],
        "live_ms": _ms([r["total"] for r in seen["live"]]),
        "box_ms": {phase: _ms([r[phase] for r in seen["box"]]) for phase in ("copy", "run", "remove", "total")},
        "paired_difference_ms": _ms([b["total"] - a["total"] for a, b in zip(seen["live"], seen["box"], strict=True)]),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
