"""A benchmark's ``infrastructure`` policy: how task runs that failed for infrastructure are treated.

A task run fails for *infrastructure* when the setup, not the agent, failed it: a deploy, a
Prefect API call, a verifier, a step before any prompt reached the agent (docs/scoring.md, "Agent
or infrastructure"). Such a run is attempted again in fresh envs and agents, with a back-off; one
still failing after its retries counts 0 (the default) or is left out of the mean; and a benchmark
where too many runs ended that way fails instead of reporting a skewed mean.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings

MAX_RETRIES = 10
"""A bound on ``retries``: a failure that survives ten fresh attempts is not transient."""


class InfrastructurePolicy(BaseModel):
    """What a benchmark does with task runs that failed for infrastructure."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    retries: int = Field(default=2, ge=0, le=MAX_RETRIES)
    """How many more times a task run that failed for infrastructure is attempted, each time as a
    new run (subflow, task run or flow run) in fresh envs and agents; 0 turns retries off. Failures
    that would repeat (a run refused before it started, a configuration error) are not retried."""
    backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    """Wait before the first retry; each later retry waits twice as long, give or take 20%."""
    exclude_from_mean: bool = False
    """Leave task runs still failed for infrastructure after their retries out of the mean score,
    the pass rate and pass@k (counted and shown as excluded). ``false``: they count as FAILED, 0."""
    max_error_rate: float | None = Field(default=None, ge=0, le=1)
    """Fail the benchmark when more than this share of its task runs failed for infrastructure
    after their retries (``bench`` exits 5); ``null``: never."""
