"""Where a benchmark run's tasks come from: a file the command validated is handed to the flow, not read
again; a file changed since is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_file
from prefect_agentenv.engine import benchmark_source
from prefect_agentenv.engine.benchmark_source import hand_over, load_source, slug_of

TASK = {"id": "one", "steps": [{"id": "grade", "type": "test_score", "score": 1.0}]}


def write(folder: Path, slug: str) -> Path:
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": slug, "slug": slug, "tasks": [{"id": "one", "steps": TASK["steps"]}]}))
    return path


def test_a_handed_over_file_is_not_read_again_by_the_flow_or_its_run_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "first")
    hand_over(str(path), validate_benchmark_file(path))

    def read_again(path: object) -> None:
        raise AssertionError(f"{path} was read again")

    monkeypatch.setattr(benchmark_source, "validate_benchmark_file", read_again)
    monkeypatch.setattr(benchmark_source, "read_document", read_again)
    source = load_source(None, str(path))
    assert source.header.slug == "first" and [t.task_id for t in source.tasks] == ["one"]
    assert slug_of(str(path)) == "first"


def test_a_file_changed_after_it_was_handed_over_is_read_again(tmp_path: Path) -> None:
    path = write(tmp_path, "first")
    hand_over(str(path), validate_benchmark_file(path))
    write(tmp_path, "second-name")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert load_source(None, str(path)).header.slug == "second-name"
