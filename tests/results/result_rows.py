"""Result rows for the statistics tests: one task's runs over seeds, two agent setups."""

from __future__ import annotations

from typing import Any

from prefect_agentenv.grading.outcome import Outcome
from prefect_agentenv.results import AgentSetup, SetupFingerprint, TaskResult

SCRIPTED = SetupFingerprint(benchmark="mail", benchmark_version="1", package_version="0.1.0",
                            agents=[AgentSetup(name="assistant", agent_id="scripted", version="1.0.0")],
                            overrides={"a2a_agent_id": "scripted"})
LLM = SCRIPTED.model_copy(update={"agents": [AgentSetup(name="assistant", agent_id="llm", version="1.0.0",
                                                        model="mock")],
                                  "overrides": {"a2a_agent_id": "llm"}, "models": ["mock"]})


def result(task: str, outcome: str, score: float | None = None, *, seed: int = 0, epoch: int = 0,
           **extra: Any) -> TaskResult:
    kind = Outcome(outcome)
    value = {Outcome.PASSED: 1.0, Outcome.FAILED: 0.0, Outcome.TIMED_OUT: 0.0}.get(kind, score)
    status = "failed" if kind in (Outcome.FAILED, Outcome.TIMED_OUT) else "completed"
    return TaskResult(task_id=task, seed_index=seed, epoch=epoch, status=status, outcome=kind,
                      score=value if score is None else score, **extra)


def seeded(outcome: str, n: int = 8, **extra: Any) -> list[TaskResult]:
    """One task over ``n`` seeds, every run ending in ``outcome``."""
    return [result("reply", outcome, seed=i, tags=["mail"], **extra) for i in range(n)]
