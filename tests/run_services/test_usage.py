"""Tokens and cost per prompt, task run and benchmark: read from the agent or its trajectory, priced
from the model block's table when the agent gave no cost."""

from __future__ import annotations

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results.rows import TaskResult
from prefect_agentenv.results.stats.summary import summarize
from prefect_agentenv.results.stats.summary_markdown import summary_markdown
from prefect_agentenv.run_services.usage import prompt_usage
from prefect_agentenv.usage import ModelPrice, TokenUsage, total_usage

OPENCODE_STEP = {"type": "step_finish", "part": {"type": "step-finish", "tokens": {"input": 900, "output": 35,
                                                                                  "total": 935}, "cost": 0}}
CODEX_TURN = {"type": "turn.completed", "usage": {"input_tokens": 1200, "output_tokens": 40}}
PRICE = ModelPrice(input_per_million=2.0, output_per_million=8.0)


def test_what_the_agent_reports_wins_over_its_trajectory() -> None:
    usage = prompt_usage({"tool_call_count": 1, "input_tokens": 10, "output_tokens": 2, "cost_usd": 0.5},
                         [CODEX_TURN], PRICE)

    assert usage == TokenUsage(input_tokens=10, output_tokens=2, cost_usd=0.5, source="agent")


def test_tokens_only_a_trajectory_shows_are_read_from_opencode_and_codex_events() -> None:
    assert prompt_usage({"tool_call_count": 1}, [OPENCODE_STEP, OPENCODE_STEP], None) == \
        TokenUsage(input_tokens=1800, output_tokens=70, source="trajectory")
    assert prompt_usage({}, [CODEX_TURN], None) == TokenUsage(input_tokens=1200, output_tokens=40, source="trajectory")


def test_tokens_without_a_cost_are_priced_from_the_price_table() -> None:
    usage = prompt_usage({}, [CODEX_TURN], PRICE)

    assert usage is not None and usage.cost_usd == round((1200 * 2.0 + 40 * 8.0) / 1e6, 6)


def test_nothing_reported_is_no_usage_not_zero_tokens() -> None:
    assert prompt_usage({"tool_call_count": 2}, [{"type": "text"}], PRICE) is None
    assert total_usage([None, None]) is None


def test_a_benchmark_sums_the_usage_of_its_runs_and_its_summary_says_so() -> None:
    runs = [TaskResult(task_id=f"t{i}", status="completed", outcome=Outcome.PASSED, score=1.0,
                       usage=TokenUsage(input_tokens=100 * i, output_tokens=10, cost_usd=0.01 if i else None))
            for i in range(3)] + [TaskResult(task_id="t9", status="completed", outcome=Outcome.PASSED, score=1.0)]

    summary = summarize(runs)

    assert summary.usage == TokenUsage(input_tokens=300, output_tokens=30, cost_usd=0.02, source="sum")
    assert "Usage: 300 input tokens, 30 output tokens, $0.0200." in summary_markdown(summary)
