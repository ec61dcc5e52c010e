"""The judge gate before a benchmark spends anything.

With ``--require-calibrated-judge K`` (the flow's ``require_calibrated_judge``), the judge setup of
every rubric verifier is worked out from the documents, the run's overrides (each sweep cell's) and
the configured model endpoint (:mod:`prefect_agentenv.engine.judge_plan`) and checked against its
calibration (:mod:`prefect_agentenv.results.judges.setup_gate`) before any task run starts: a setup
that is uncalibrated, stale, undefined or below ``K`` refuses the run at once. A verifier whose
judge is an agent the task deploys is known only once the task runs; it is checked after, on the
scores themselves, as before.

``bench`` runs the check itself before it starts the flow, so a refusal is one line on stderr and
no flow run at all; the flow runs it again for a run started from the UI or a deployment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence

from prefect import get_run_logger

from prefect_agentenv.artifacts import ArtifactBackend, get_artifact_store
from prefect_agentenv.documents.benchmarks.matrix import merge_matrix, sweep_cells
from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.engine.benchmark_source import load_source
from prefect_agentenv.engine.judge_plan import planned_setups
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.results.judges.setup_gate import SetupGate, check_setups

__all__ = ["JudgeGateRefusedError", "gate_before_run", "judge_preflight", "preflight_of_file"]


class JudgeGateRefusedError(AgentEnvError):
    """The judge gate refused a run before any task run started; the message is the one line to show."""


async def judge_preflight(store: ArtifactBackend, slug: str, tasks: Iterable[ExpandedTask],
                          cell_overrides: Iterable[Mapping[str, str]], min_kappa: float) -> SetupGate:
    """The gate's verdict on every rubric verifier's setup knowable before the run."""
    planned = await planned_setups(tasks, cell_overrides)
    known = [(p.task_id, p.verifier_id, p.setup) for p in planned if p.setup is not None]
    unknown = sorted({f"{p.task_id}/{p.verifier_id}" for p in planned if p.setup is None})
    return await asyncio.to_thread(check_setups, store, slug, known, min_kappa, unknown=unknown)


async def gate_before_run(store: ArtifactBackend, slug: str, tasks: Iterable[ExpandedTask],
                          cell_overrides: Iterable[Mapping[str, str]], min_kappa: float, *, quiet: bool) -> str:
    """The flow's check: the passing line (logged unless ``quiet``: the CLI printed it before the flow started).

    Raises:
        JudgeGateRefusedError: a setup falls short; the message is the one line that says which and what to run.
    """
    verdict = await judge_preflight(store, slug, tasks, cell_overrides, min_kappa)
    if not verdict.passed:
        raise JudgeGateRefusedError(verdict.line)
    if not quiet:
        get_run_logger().info("%s", verdict.line)
    return verdict.line


async def preflight_of_file(path: str, overrides: Mapping[str, str], matrix: Mapping[str, Sequence[str]] | None,
                            min_kappa: float) -> SetupGate:
    """:func:`judge_preflight` for a benchmark file or published version, as ``bench`` is about to run it.

    Raises:
        TaskDocumentError, ConfigurationError, ArtifactError: as the flow would refuse the run.
    """
    source = await asyncio.to_thread(load_source, None, path)
    bench = source.header
    run_overrides = {**bench.defaults.overrides, **overrides}
    cells = sweep_cells(merge_matrix(bench.matrix, matrix), run_overrides)
    every = [{**run_overrides, **cell.overrides} for cell in cells] or [run_overrides]
    with get_artifact_store() as store:
        return await judge_preflight(store, bench.slug, source.tasks, every, min_kappa)
