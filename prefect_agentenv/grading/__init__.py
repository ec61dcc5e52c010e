"""Grading: judges, aggregators, typed assertions, task score and outcome."""

from prefect_agentenv.grading.outcome import Outcome, task_outcome, task_score

__all__ = ["Outcome", "task_outcome", "task_score"]
