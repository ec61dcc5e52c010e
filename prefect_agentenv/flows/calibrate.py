"""The ``calibrate-judges`` flow: a benchmark run's judges against its human labels, from the UI or a worker.

The same calibration as ``prefect-agentenv calibrate`` (:mod:`prefect_agentenv.results.judges.calibration_run`),
as a flow run: its tables are a markdown artifact, its data the calibration records. It records only
when given labels or ``record``; otherwise it shows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.states import Completed, Failed, State

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.results.judges.calibration_markdown import calibration_markdown
from prefect_agentenv.results.judges.calibration_run import calibrate_run
from prefect_agentenv.results.judges.labels import LabelFileError

__all__ = ["calibrate_judges"]


@flow(name="calibrate-judges", flow_run_name="calibrate {run}", persist_result=False)
async def calibrate_judges(run: str, labels: str | None = None, reviewer: str | None = None,
                           record: bool = False) -> State:
    """Compare each judge and the panel of a run's rubric verifiers with the label pool of their criteria.

    Args:
        run: The run: `<slug>/<run id>`, a run id, or `<slug>` for its latest finished run.
        labels: A labels.jsonl or .csv on the worker to add to the run's labels first (then the calibration is recorded).
        reviewer: The reviewer of that file's labels that name none.
        record: Record each judge setup's calibration from the label pool, even without new labels.
    """
    try:
        with get_artifact_store() as store:
            outcome = await asyncio.to_thread(calibrate_run, store, run, labels=Path(labels) if labels else None,
                                              reviewer=reviewer, record=record)
    except (ArtifactError, LabelFileError) as exc:  # a user mistake: no traceback
        get_run_logger().error("%s", exc)
        return Failed(message=str(exc))
    await acreate_markdown_artifact(markdown=calibration_markdown(outcome), key="judge-calibration")
    data = [r.model_dump(mode="json") for r in outcome.records]
    if not outcome.records:
        return Failed(message="no label matches a judged criterion of this run", data=data)
    briefs = ", ".join(f"{r.fingerprint}: {r.brief()}" for r in outcome.records)
    verb = "recorded" if outcome.recorded else "shown, not recorded,"
    return Completed(message=f"{verb} {len(outcome.records)} judge setup(s) ({briefs})", data=data)
