"""The tables ``bench`` prints keep every row's identity whole at 80 and 120 columns, in a terminal
and in a CI log: sweep cells by the values that differ, task ids never cut, errors shortened at a
word boundary with the command that shows them whole."""

from __future__ import annotations

import pytest
from rich.console import Console

from prefect_agentenv.commands.progress import _Board
from prefect_agentenv.commands.tables import FULL_ERRORS, shorten, sweep_tables
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import TaskResult, summarize_sweep
from prefect_agentenv.results.stats.sweep_summary import short_cell_names

TASKS = ["env-roundtrip", "reply-to-dana-scripted", "chart-handoff", "prior-auth-lumbar-mri-with-a-long-name"]
LABELS = ["a2a_agent_id=scripted", "a2a_agent_id=llm"]
ERROR = ("step reply: the agent answered with an error: the model endpoint refused the request because "
         "the plan named a tool the env does not have")


def _results() -> list[TaskResult]:
    out = []
    for cell, fails in zip(LABELS, (False, True), strict=True):
        for i, task in enumerate(TASKS):
            failed = fails and i % 2 == 1
            out.append(TaskResult(task_id=task, seed_index=i % 2, epoch=0, status="completed", cell=cell,
                                  outcome=Outcome.FAILED if failed else Outcome.PASSED, score=0.0 if failed else 1.0,
                                  duration_s=12.3, error=ERROR if failed else None))
    # A long outcome (an infrastructure failure after retries) must not squeeze the task ids.
    out[2] = out[2].model_copy(update={"outcome": Outcome.FAILED, "attempts": 3,
                                       "score": 0.0, "error": ERROR})
    return out


def _board() -> _Board:
    board = _Board()
    board.on_event("start", {"run_id": "c1bf91d9-2ab1-4df4-bdf2-7b57d5b68282", "slug": "agentenv-examples",
                             "total": 8, "pending": 8, "cells": LABELS, "axes": ["a2a_agent_id"]})
    for result in _results():
        board.on_event("result", result.model_dump(mode="json"))
    return board


def _text(width: int, *renderables: object) -> str:
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    console.print(*renderables)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 120])
def test_every_task_run_of_the_board_keeps_its_task_and_cell_whole(width: int) -> None:
    board = _board()
    console = Console(width=width, force_terminal=False)
    text = _text(width, board.render(None, width, console))
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines), text
    for task in TASKS[:3]:  # the ids that fit stay on one line with their cell
        for cell in ("scripted", "llm"):
            assert any(task in line and f" {cell} " in line for line in lines), (task, cell, text)
    long = TASKS[3]
    assert long in text or long in "".join(line.strip() for line in lines), text  # folded, never cut
    assert "a2a_agen…" not in text and "…" not in text.split("error")[0]
    assert text.count("PASSED") == 5 and text.count("FAILED") == 3, text  # outcomes wrap at spaces, never cut


@pytest.mark.parametrize("width", [80, 120])
def test_errors_are_shortened_at_a_word_boundary_and_the_run_says_where_they_are_whole(width: int) -> None:
    board = _board()
    text = _text(width, board.render(None, width, Console(width=width, force_terminal=False)))
    assert board.shortened
    shortened = [line for line in text.splitlines() if "step reply:" in line]
    assert len(shortened) == 3, text
    for line in shortened:
        kept = line.split("step reply:", 1)[1].rstrip().removesuffix("…").strip()
        assert ERROR.startswith("step reply: " + kept) and ERROR[len("step reply: " + kept)] == " ", line
    assert FULL_ERRORS.format(slug="agentenv-examples", run_id="r1") == (
        "prefect-agentenv view --benchmark agentenv-examples --run r1")


@pytest.mark.parametrize("width", [80, 120])
def test_a_sweeps_tables_name_each_cell_by_what_differs_with_the_key_in_the_title(width: int) -> None:
    sweep = summarize_sweep(_results(), [(label, {"a2a_agent_id": label.split("=")[1]}) for label in LABELS],
                            {"a2a_agent_id": ["scripted", "llm"]})
    text = _text(width, *sweep_tables(sweep))
    assert all(len(line.rstrip()) <= width for line in text.splitlines()), text
    assert "sweep over a2a_agent_id: cells" in text and "…" not in text
    cells = [line.split() for line in text.splitlines() if line.split()[:1] in (["scripted"], ["llm"])]
    assert [row[0] for row in cells[:2]] == ["scripted", "llm"], text  # one row per cell, told apart
    [pair] = [line.split() for line in text.splitlines() if line.startswith("scripted ") and " llm " in line]
    assert pair[:3] == ["scripted", "llm", "4"], text
    assert "too few pairs" in text and "4 pairs" in text  # 4 pairs: no interval, and why


def test_short_cell_names_keep_only_the_values_that_differ_and_stay_apart() -> None:
    labels = ["a2a_agent_id=llm,model=a", "a2a_agent_id=llm,model=b"]
    assert short_cell_names(labels, ["a2a_agent_id", "model"]) == {labels[0]: "a", labels[1]: "b"}
    crossed = ["a2a_agent_id=x,model=a", "a2a_agent_id=y,model=a", "a2a_agent_id=x,model=b"]
    assert list(short_cell_names(crossed, ["a2a_agent_id", "model"]).values()) == ["x,a", "y,a", "x,b"]
    assert short_cell_names(["odd"], ["model"]) == {"odd": "odd"}


def test_shorten_cuts_at_a_word_boundary() -> None:
    assert shorten("the agent answered with an error", 20) == "the agent answered…"
    assert shorten("short", 20) == "short"
    assert shorten("averyveryverylongword and more", 10) == "averyvery…"
