"""The ``rescore`` flow: a benchmark run's kept submissions scored again, from the UI or a worker.

The same rescore as ``prefect-agentenv rescore`` (``flows/rescoring``), as a flow run: its summary
is a markdown artifact, its data the :class:`~prefect_agentenv.flows.rescoring.RescoreResult`.
"""

from __future__ import annotations

import asyncio

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.states import Completed, Failed, State

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.exceptions import ArtifactError, ConfigurationError, TaskDocumentError
from prefect_agentenv.flows.rescoring import load_documents, rescore_run


@flow(name="rescore", flow_run_name="rescore {run}", persist_result=False, log_prints=True)
async def rescore(run: str, task: str | None = None, benchmark: str | None = None,
                  overrides: dict[str, str] | None = None) -> State:
    """Score a benchmark run's task runs again from their kept submissions, without deploying the agent.

    Args:
        run: The run: `<slug>/<run id>`, a run id, or `<slug>` for its latest finished run.
        task: Score with this task document (a path on the worker or an artifact id) instead of the
            run's frozen copy, for every task run of its task id.
        benchmark: Score with this benchmark file's tasks (matched by task id and seed).
        overrides: Run overrides for the verifiers, e.g. `{"judge_model": "gpt-4.1-mini"}`.
    """
    logger = get_run_logger()
    try:
        documents = await asyncio.to_thread(load_documents, task, benchmark)
        with get_artifact_store() as store:
            result = await rescore_run(store, run, documents, overrides=overrides)
    except (TaskDocumentError, ConfigurationError, ArtifactError) as exc:  # a user mistake: no traceback
        logger.error("%s", exc)
        return Failed(message=str(exc))
    markdown = result.markdown()
    try:
        await acreate_markdown_artifact(markdown, description=f"Rescore of {result.slug}/{result.run_id}")
    except Exception as exc:  # the artifact is a view of results already stored
        logger.warning("could not publish the rescore's artifact: %s", exc)
    message = f"scoring version {result.version}: {result.headline}"
    if result.missing:
        message += f" ({len(result.missing)} task run(s) not rescored)"
    return Completed(message=message, data=result.model_dump(mode="json"))
