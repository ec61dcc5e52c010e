"""Which tags a step's task run carries.

Prefect asks its API for a concurrency slot for every tag of every task run (one
``increment-with-lease`` request before the task body starts), whether or not a limit exists.
On a SQLite-backed server that request is often answered 503 while the server is writing the
run's events, and the client then backs off for 2 s: in ``benchmarks/task_overhead.py`` that
was 2.4 s before three of the five steps of a one-prompt task. A tag is only worth that request
when a concurrency limit uses it, so by default (``PREFECT_AGENTENV_TAG_TASK_RUNS=auto``) a
step's task run carries just the tags that have a limit — among its step type and the tags of
the run it belongs to (a benchmark's slug, the task's tags) — which the API is asked for once
per process every ``LIMITS_TTL_SECONDS`` (the listing ``run_services/concurrency_slots.py`` keeps for
env and agent limits too). The flow run keeps all its tags.

``true`` tags every step's task run with its step type and the run's tags (the requests are
always made); ``false`` adds no step-type tag.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prefect.context import TagsContext

from prefect_agentenv.run_services.concurrency_slots import ApiUnreachable, limit_names
from prefect_agentenv.settings import get_settings


async def limited_tags() -> frozenset[str] | None:
    """Tags that have a Prefect concurrency limit (``tag:<tag>``); None when the API cannot say."""
    names = await limit_names()
    if names is None:
        return None
    return frozenset(name.removeprefix("tag:") for name in names if name.startswith("tag:"))


async def step_task_tags(step_type: str) -> set[str] | None:
    """The tags of a step's task run; None means "the step type plus the run's tags" (``true``).

    Raises :class:`ApiUnreachable` when the API does not answer: the step then runs without a task
    run instead of waiting a minute for slots nobody can give."""
    return await _kept_tags({step_type})


async def benchmark_task_run_tags() -> set[str] | None:
    """The tags of a benchmark's task run recorded as a Prefect task run (``task_runs_as: tasks``):
    the run's tags (its benchmark, the task's tags, its epoch and seed), by the same rule as a step's.
    Measured on a pooled benchmark, the slot requests for tags that no limit uses drew a 503 and a
    2 s back-off on about one task run in three. An unreachable API asks for no slot: the task run's
    own calls then fail, and it is retried as an infrastructure failure."""
    try:
        return await _kept_tags(set())
    except ApiUnreachable:
        return set()


async def _kept_tags(own: set[str]) -> set[str] | None:
    mode = get_settings().tag_task_runs
    if mode is True:
        return None
    if mode is False:
        return set()
    limited = await limited_tags()
    if limited is None:
        return None
    return (own | TagsContext.get().current_tags) & limited


@contextmanager
def only_tags(tags: set[str] | None) -> Iterator[None]:
    """Run a task with exactly ``tags`` (the run's inherited tags are not added); no-op for None."""
    if tags is None:
        yield
        return
    with TagsContext(current_tags=set(tags)):
        yield
