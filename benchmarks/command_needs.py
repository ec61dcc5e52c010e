"""What finding a command's needs costs a confined deploy: :func:`command_needs` on three command lines as users
register them, each timed over ``--rounds`` calls (no cache: every deploy reads the command afresh).

* **console script**: a venv's console script (``dummy-a2a`` of ``make peers``, a venv on another Python);
* **sh -c**: ``sh -c 'A2A_PORT=… exec <venv>/bin/python <script>'``, the AgentEnv SDK's way;
* **runner's venv**: a reference agent on the runner's own venv (an editable install: its finder names every
  subpackage, and its site-packages holds hundreds of entries).

    .venv/bin/python benchmarks/command_needs.py --rounds 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from prefect_agentenv.runtime.confinement.command_needs import command_needs

ROOT = Path(__file__).resolve().parents[1]


def commands() -> dict[str, list[str]]:
    peers = ROOT / ".venv-peers" / "bin" / "python"
    return {
        "console script": [str(ROOT / ".dummy-a2a" / "venv" / "bin" / "dummy-a2a"), "--port", "1"],
        "sh -c": ["sh", "-c", f"A2A_PORT=1 exec {peers} {ROOT / 'tests' / 'peers' / 'sdk_agent.py'}"],
        "runner's venv": [sys.executable, "-m", "prefect_agentenv.agents.scripted"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    path = os.environ.get("PATH", os.defpath)
    for label, argv in commands().items():
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            command_needs(argv, path=path)
            times.append((time.perf_counter() - start) * 1000)
        print(f"{label:<16} median {statistics.median(times):6.2f} ms  p90 {sorted(times)[int(0.9 * len(times))]:6.2f} ms")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
