"""Grading: judges, aggregators, typed assertions, task score and outcome.

A benchmark run's results and their statistics are :mod:`prefect_agentenv.results`.
"""

from prefect_agentenv.grading.outcome import Outcome, task_outcome, task_score

__all__ = ["Outcome", "task_outcome", "task_score"]
