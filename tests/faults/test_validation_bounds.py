"""Validation is bounded: big graphs, deep nesting, YAML bombs, bad ids, unset variables and
unwritable report paths are all answered quickly, with exit 2 and a sentence, before any deploy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents import validate_data, validate_file
from prefect_agentenv.documents.benchmarks.validation import validate_benchmark_file
from prefect_agentenv.documents.graph import ancestors, resolve_dependencies

runner = CliRunner()

YAML_BOMB = """\
slug: bomb
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
tasks: [*h]
"""


def _prompts(n: int, chain: bool) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = [
        {"id": "env", "type": "deploy_env", "env_id": "email"},
        {"id": "agent", "type": "deploy_agent", "agent_name": "a", "a2a_agent_id": "scripted", "env_ids": ["email"]},
    ]
    for i in range(n):
        step: dict[str, object] = {"id": f"p{i}", "type": "prompt_agent", "agent_name": "a", "prompt_id": f"p{i}",
                                   "prompt": "hi"}
        if chain:
            step["depends_on"] = [str(steps[-1]["id"])]
        steps.append(step)
    return steps


@pytest.mark.parametrize("chain", [False, True], ids=["implicit", "chain"])
def test_thousands_of_steps_validate_with_every_name_check(chain: bool) -> None:
    steps = _prompts(3000, chain)
    steps.append({"id": "late", "type": "prompt_agent", "agent_name": "nobody", "prompt_id": "late", "prompt": "x"})
    result = validate_data(steps)
    assert [p.step_id for p in result.problems] == ["late"]


def test_omitted_dependencies_keep_every_earlier_step_as_an_ancestor() -> None:
    ids = [f"s{i}" for i in range(2000)]
    deps = resolve_dependencies(ids, [None] * len(ids))
    assert sum(len(d) for d in deps.values()) == len(ids) - 1
    assert len(ancestors(deps)["s1999"]) == 1999


def test_json_nested_a_thousand_deep_is_a_clear_problem(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    out = runner.invoke(app, ["validate", str(path)])
    assert out.exit_code == 2
    assert "nested more than 64 levels" in out.output and "Traceback" not in out.output


def test_a_yaml_bomb_as_a_benchmark_is_refused_while_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(YAML_BOMB)
    result = validate_benchmark_file(path)
    assert not result.ok
    assert "values" in result.problems[0].message or "aliases" in result.problems[0].message
    out = runner.invoke(app, ["validate", str(path)])
    assert out.exit_code == 2


def test_ids_must_be_printable_and_at_most_128_characters() -> None:
    result = validate_data([{"id": "a\x00b", "type": "test_noop"}, {"id": "x" * 10_000, "type": "test_noop"}])
    messages = [p.render() for p in result.problems]
    assert any("unprintable character '\\x00'" in m for m in messages)
    assert any("at most 128" in m and len(m) < 400 for m in messages)


def test_an_unset_variable_is_a_warning_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTENV_NEVER_SET", raising=False)
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"id": "n", "type": "test_fail", "message": "${AGENTENV_NEVER_SET}"}]))
    assert [w.message for w in validate_file(path).warnings] == [
        "environment variable(s) not set here: ${AGENTENV_NEVER_SET}"]
    out = runner.invoke(app, ["validate", str(path)])
    assert out.exit_code == 0 and "AGENTENV_NEVER_SET" in out.output


@pytest.mark.parametrize("kind", ["directory", "too long"])
def test_an_unwritable_report_path_is_refused_before_the_run(tmp_path: Path, kind: str) -> None:
    task = tmp_path / "t.json"
    task.write_text(json.dumps([{"id": "n", "type": "test_noop"}]))
    report = tmp_path if kind == "directory" else tmp_path / ("r" * 300 + ".json")
    out = runner.invoke(app, ["run", str(task), "--report", str(report)])
    assert out.exit_code == 2
    assert "--report" in out.output and "Traceback" not in out.output
