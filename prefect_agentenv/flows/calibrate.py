"""The ``calibrate-judges`` flow: a benchmark run's judges against its human labels, from the UI or a worker.

The same calibration as ``prefect-agentenv calibrate`` (:mod:`prefect_agentenv.results.calibration_run`),
as a flow run: its tables are a markdown artifact, its data the calibration records.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.states import Completed, Failed, State

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.results.calibration_markdown import calibration_markdown
from prefect_agentenv.results.calibration_run import calibrate_run
from prefect_agentenv.results.labels import LabelFileError

__all__ = ["calibrate_judges"]


@flow(name="calibrate-judges", flow_run_name="calibrate {run}", persist_result=False)
async def calibrate_judges(run: str, labels: str | None = None, reviewer: str | None = None) -> State:
    """Compare each judge and the panel of a run's rubric verifiers with its human labels and record it.

    Args:
        run: The run: `<slug>/<run id>`, a run id, or `<slug>` for its latest finished run.
        labels: A labels.jsonl or .csv on the worker to add to the run's labels first.
        reviewer: The reviewer of that file's labels that name none.
    """
    try:
        with get_artifact_store() as store:
            found, records = await asyncio.to_thread(calibrate_run, store, run,
                                                     labels=Path(labels) if labels else None, reviewer=reviewer)
    except (ArtifactError, LabelFileError) as exc:  # a user mistake: no traceback
        get_run_logger().error("%s", exc)
        return Failed(message=str(exc))
    markdown = f"# Calibration of {found.slug}/{found.run_id}\n\n{calibration_markdown(records)}"
    await acreate_markdown_artifact(markdown=markdown, key="judge-calibration")
    data = [r.model_dump(mode="json") for r in records]
    if not records:
        return Failed(message="no label matches a judged criterion of this run", data=data)
    kappas = ", ".join(f"{r.fingerprint}: κ {r.kappa:.2f}" if r.kappa is not None else f"{r.fingerprint}: κ n/a"
                       for r in records)
    return Completed(message=f"calibrated {len(records)} judge setup(s) ({kappas})", data=data)
