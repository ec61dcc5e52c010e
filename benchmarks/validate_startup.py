"""`validate` and `--help` start-up: two source trees side by side, interleaved, one invocation.

Each side is a copy of ``prefect_agentenv`` (``git archive`` of a revision, or this checkout's
working tree) run by the same interpreter, so the only difference is the package source. Every
round runs each command once per side, alternating which side goes first; the medians of wall
time and of the child's CPU time (user + system) are printed with the load average, and the
two sides' outputs are compared (they must be identical).

    .venv/bin/python benchmarks/validate_startup.py --before 339c89b --runs 9 \\
        --out benchmarks/results/validate_startup.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The package is installed editable; its finder is dropped so the tree on sys.path[0] is the one run.
# `main` is the console script's entry point (the command, then its quick exit).
_RUNNER = """
import sys
tree = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "prefect_agentenv" not in getattr(f, "__module__", "") + repr(f)]
sys.path.insert(0, tree)
sys.argv[0] = "prefect-agentenv"
import prefect_agentenv
assert prefect_agentenv.__file__.startswith(tree), prefect_agentenv.__file__
from prefect_agentenv.cli import main
main()
"""

COMMANDS = {
    "validate task": ["validate", "examples/reply-to-dana.json"],
    "validate benchmark": ["validate", "examples/benchmark.yaml"],
    "--help": ["--help"],
}


def _tree(rev: str | None, into: Path) -> Path:
    """The package source of ``rev`` (None: this working tree) as a folder to put on sys.path."""
    if rev is None:
        return ROOT
    data = subprocess.run(["git", "archive", rev, "prefect_agentenv"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _once(tree: Path, args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, child CPU seconds and output of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _RUNNER, str(tree), *args], cwd=ROOT, capture_output=True,
                         text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, f"rc={out.returncode}\n{out.stdout}{out.stderr}"


def measure(trees: dict[str, Path], runs: int) -> dict[str, dict[str, Any]]:
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {c: {s: [] for s in trees} for c in COMMANDS}
    outputs: dict[str, dict[str, set[str]]] = {c: {s: set() for s in trees} for c in COMMANDS}
    for side in trees:  # warm the bytecode of both trees' imports (and the OS file cache)
        for args in COMMANDS.values():
            _once(trees[side], args)
    for i in range(runs):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        for name, args in COMMANDS.items():
            for side in order:
                wall, cpu, text = _once(trees[side], args)
                samples[name][side].append((wall, cpu))
                outputs[name][side].add(text)
    result: dict[str, dict[str, Any]] = {}
    for name in COMMANDS:
        texts = [outputs[name][s] for s in trees]
        result[name] = {s: {"wall_median_s": round(statistics.median(w for w, _ in samples[name][s]), 3),
                            "cpu_median_s": round(statistics.median(c for _, c in samples[name][s]), 3),
                            "wall_min_s": round(min(w for w, _ in samples[name][s]), 3)} for s in trees}
        result[name]["same_output"] = all(t == texts[0] and len(t) == 1 for t in texts)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision of the 'before' side")
    parser.add_argument("--after", default=None, help="git revision of the 'after' side (default: working tree)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _tree(opts.before, Path(tmp, "before")), "after": _tree(opts.after, Path(tmp, "after"))}
        load_start = os.getloadavg()
        result = measure(trees, opts.runs)
        load_end = os.getloadavg()
    report = {"before": opts.before, "after": opts.after or "working tree", "runs": opts.runs,
              "cpus": os.cpu_count(), "loadavg_start": load_start, "loadavg_end": load_end, "commands": result}
    print(f"before={report['before']} after={report['after']} runs={opts.runs} "
          f"load {load_start[0]:.2f} -> {load_end[0]:.2f} (1-min), {os.cpu_count()} CPUs")
    print(f"{'command':<20} {'wall before':>12} {'wall after':>11} {'CPU before':>11} {'CPU after':>10}  same output")
    for name, sides in result.items():
        b, a = sides["before"], sides["after"]
        print(f"{name:<20} {b['wall_median_s']:>11.3f}s {a['wall_median_s']:>10.3f}s {b['cpu_median_s']:>10.3f}s "
              f"{a['cpu_median_s']:>9.3f}s  {'yes' if sides['same_output'] else 'NO'}")
    if opts.out:
        opts.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
