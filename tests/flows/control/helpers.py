"""What the steering tests share: a benchmark file, ``control`` from another process, its status polled,
and what a ``bench`` started by the ``bench_process`` fixture (conftest.py) printed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml


def write_bench(tmp_path: Path, slug: str, tasks: list[dict[str, Any]], *, concurrency: int, epochs: int = 1,
                **more: Any) -> Path:
    path = tmp_path / f"{slug}.yaml"
    path.write_text(yaml.safe_dump({"name": slug, "slug": slug, "concurrency": concurrency, "epochs": epochs,
                                    "tasks": tasks, **more}))
    return path


def sleeper(task_id: str, seconds: float, **more: Any) -> dict[str, Any]:
    return {"id": task_id, "steps": [{"id": "work", "type": "test_sleep", "seconds": seconds},
                                     {"id": "grade", "type": "test_score", "score": 1.0, "depends_on": ["work"]}],
            **more}


def control(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefect_agentenv.cli", "control", *args], env=env, text=True,
                          capture_output=True, timeout=120)


logs: dict[subprocess.Popen[str], Path] = {}
"""Where each ``bench_process`` writes what it prints."""


def output_of(bench: subprocess.Popen[str]) -> str:
    """What a ``bench_process`` printed."""
    return logs[bench].read_text()


def wait_for_status(env: dict[str, str], run: str, ready: Any, timeout: float = 120) -> dict[str, Any]:
    """Poll ``control status RUN --json`` until ``ready(status)``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        done = control(env, "status", run, "--json")
        if done.returncode == 0:
            last = json.loads(done.stdout)
            if ready(last):
                return last
        time.sleep(0.5)
    raise AssertionError(f"the run never reached the state wanted; last status: {last}")


def wait_for(run: str, ready: Any, timeout: float = 120) -> dict[str, Any]:
    """Poll the run's status Variable from this process (quicker than a ``control status`` process
    each time) until ``ready(status)``."""
    import asyncio

    from prefect.client.orchestration import get_client

    from prefect_agentenv.exceptions import ConfigurationError
    from prefect_agentenv.flows.control.channel import ControlChannel

    async def read() -> dict[str, Any] | None:
        async with get_client() as client:
            try:
                return (await ControlChannel(client).find(run)).model_dump(mode="json")
            except ConfigurationError:
                return None

    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = asyncio.run(read()) or last
        if last is not None and ready(last):
            return last
        time.sleep(0.3)
    raise AssertionError(f"the run never reached the state wanted; last status: {last}")
