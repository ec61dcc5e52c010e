"""Grading: judges, aggregators, typed assertions, task score and outcome.

Judges: ``judge`` (the prompt and the parsing of the answer), ``judging`` (asking with corrective
retries), ``panel`` (several judges' verdicts folded per criterion, and their disagreement) and
``judge_setup`` (the fingerprint a judge's calibration is keyed by).

A benchmark run's results and their statistics are :mod:`prefect_agentenv.results`.
"""

from prefect_agentenv.grading.outcome import Outcome, task_outcome, task_score

__all__ = ["Outcome", "task_outcome", "task_score"]
