"""The live board of ``bench`` keeps what it draws, not the results: a nightly of 1 000 task runs
must not grow the flow process by a result model per task run."""

from __future__ import annotations

import gc
import tracemalloc

from rich.console import Console

from prefect_agentenv.commands.progress import _Board
from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import TaskResult


def _result(epoch: int) -> dict[str, object]:
    return TaskResult(task_id="reply", seed_index=1, seed={"signer": "Sam"}, epoch=epoch, tags=["email"],
                      status="completed", outcome=Outcome.PASSED if epoch % 2 else Outcome.FAILED,
                      score=1.0 if epoch % 2 else 0.0, duration_s=2.5, error=None if epoch % 2 else "x" * 200,
                      report_url=f"file:///runs/{epoch}/report.json", flow_run_id=f"{epoch:08d}-run").model_dump(mode="json")


def test_the_board_draws_every_finished_task_run_from_a_few_hundred_bytes_each() -> None:
    board = _Board()
    board.on_event("start", {"run_id": "r1", "slug": "nightly", "total": 400, "pending": 400})
    payloads = [_result(e) for e in range(400)]
    board.on_event("result", payloads[0])  # the first row pays for what is created once
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for payload in payloads[1:]:
        board.on_event("result", payload)
    gc.collect()
    per_row = (tracemalloc.get_traced_memory()[0] - before) / 399
    tracemalloc.stop()
    assert per_row < 1500, f"{per_row:.0f} bytes per finished task run"

    console = Console(width=160, record=True)
    console.print(board.render(width=160, console=console))
    text = console.export_text()
    assert "400/400 task runs done" in text
    assert text.count("PASSED") == 200 and text.count("FAILED") == 200
    # The error, shortened to the room the other columns leave in 160 columns, and said to be.
    cut = [line for line in text.splitlines() if "x" * 20 in line]
    assert len(cut) == 200 and all(len(line) <= 160 and line.rstrip().endswith("x…") for line in cut)
    assert board.shortened


def test_a_terminal_board_draws_the_newest_rows_and_says_how_many_came_before() -> None:
    board = _Board()
    board.on_event("start", {"run_id": "r1", "slug": "nightly", "total": 1000, "pending": 1000})
    for epoch in range(1000):
        board.on_event("result", _result(epoch))
    console = Console(width=160, record=True)
    console.print(board.render(last=20, width=160, console=console))
    text = console.export_text()
    assert "1000/1000 task runs done" in text
    assert "… 980 earlier task runs" in text
    assert text.count("PASSED") + text.count("FAILED") == 20
    assert " 999 " in text and " 979 " not in text  # the newest epochs, in order
