"""A sweep's matrix: checked whole before anything runs, crossed into labelled cells."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.documents.benchmarks.matrix import check_matrix, merge_matrix, sweep_cells
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_file
from prefect_agentenv.exceptions import ConfigurationError

STEPS = [{"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []}]


def problems(tmp_path: Path, matrix: Any) -> list[str]:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Sweep", "slug": "sweep", "matrix": matrix,
                                    "tasks": [{"id": "t", "steps": STEPS}]}))
    return [p.render() for p in validate_benchmark_file(path).problems]


@pytest.mark.parametrize(("matrix", "expected"), [
    ({"a2a_agent": ["llm"]}, "at $.matrix: unknown override 'a2a_agent': did you mean 'a2a_agent_id'?"),
    ({"model": []}, "at $.matrix: matrix.model: the list is empty; give at least one value"),
    ({"model": ["a", "b", "a"]}, "at $.matrix: matrix.model: 'a' given more than once"),
    ({"model": "a"}, "at $.matrix: matrix.model: give a list of values, e.g. model: [a, b]"),
    ({"model": [["a"]]}, "at $.matrix: matrix.model: every value must be text or a number"),
])
def test_a_bad_matrix_block_is_one_problem_naming_the_key(tmp_path: Path, matrix: Any, expected: str) -> None:
    found = problems(tmp_path, matrix)
    assert any(p.startswith(expected) for p in found), found


def test_a_matrix_block_is_read_with_numbers_as_text(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Sweep", "slug": "sweep", "tasks": [{"id": "t", "steps": STEPS}],
                                    "matrix": {"a2a_agent_id": ["scripted", "llm"], "model": [4, 4.1]}}))
    result = validate_benchmark_file(path)
    assert result.ok and result.benchmark is not None, [p.render() for p in result.problems]
    assert result.benchmark.matrix == {"a2a_agent_id": ["scripted", "llm"], "model": ["4", "4.1"]}


def test_cells_cross_every_axis_in_order_with_free_form_values_by_digest() -> None:
    cells = sweep_cells({"a2a_agent_id": ["scripted", "llm"], "model": ["a", "b"]}, {"judge_model": "j"})
    assert [c.label for c in cells] == ["a2a_agent_id=scripted,model=a", "a2a_agent_id=scripted,model=b",
                                        "a2a_agent_id=llm,model=a", "a2a_agent_id=llm,model=b"]
    assert cells[3].overrides == {"a2a_agent_id": "llm", "model": "b"}
    [secret] = sweep_cells({"agent_config": ['{"token": "s3cret"}']})
    assert secret.label.startswith("agent_config=sha256:") and "s3cret" not in secret.label
    assert secret.overrides == {"agent_config": '{"token": "s3cret"}'}  # the run gets the value itself
    assert sweep_cells({}) == []


def test_the_run_s_axes_replace_the_document_s_key_by_key() -> None:
    merged = merge_matrix({"a2a_agent_id": ["scripted"], "model": ["a"]}, {"model": ["b", "c"]})
    assert merged == {"a2a_agent_id": ["scripted"], "model": ["b", "c"]}
    with pytest.raises(ConfigurationError, match="matrix.model: the list is empty"):
        merge_matrix(None, {"model": []})
    assert check_matrix(None) == {}
