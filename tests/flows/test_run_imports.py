"""`prefect-agentenv run` of one task document loads only the task side of the documents: the
benchmark side (benchmark models, their validation, compiling, published versions) loads when a
name of it is first used."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prefect.settings import PREFECT_API_URL

import prefect_agentenv.documents as documents

BENCHMARK_SIDE = [
    "prefect_agentenv.documents.benchmarks.document", "prefect_agentenv.documents.benchmarks.validation",
    "prefect_agentenv.documents.compile", "prefect_agentenv.documents.verial.compile",
    "prefect_agentenv.documents.published.snapshot", "prefect_agentenv.documents.published.store",
    "prefect_agentenv.results.stats.summary", "prefect_agentenv.results.comparison.compare", "prefect_agentenv.results.store.run_store",
]

_PROBE = """
import atexit, json, sys
from prefect_agentenv.cli import main
watched = json.loads(sys.argv[2])
atexit.register(lambda: print("LOADED " + json.dumps(sorted(m for m in watched if m in sys.modules))))
sys.argv = ["prefect-agentenv", "run", sys.argv[1], "--report", sys.argv[3]]
main()
"""


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
def test_a_run_of_one_task_never_imports_the_benchmark_side(tmp_path: Path) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"id": "light", "steps": [{"id": "a", "type": "test_noop"},
                                                          {"id": "b", "type": "test_noop", "depends_on": ["a"]}]}))
    report = tmp_path / "report.json"
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    out = subprocess.run([sys.executable, "-c", _PROBE, str(task), json.dumps(BENCHMARK_SIDE), str(report)], env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(report.read_text())["status"] == "completed"
    loaded = next(line for line in out.stdout.splitlines() if line.startswith("LOADED "))
    assert json.loads(loaded.removeprefix("LOADED ")) == []


@pytest.mark.parametrize("name", sorted(documents._LAZY))
def test_every_name_loaded_on_use_is_its_modules_own(name: str) -> None:
    value = getattr(documents, name)
    assert value is getattr(importlib.import_module(documents._LAZY[name]), name)
    assert name in documents.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        documents.Nope  # noqa: B018
