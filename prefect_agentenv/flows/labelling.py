"""The ``label-judged-run`` flow: a reviewer labels a sample of a run's judged criteria in the Prefect UI.

The flow draws task runs of a benchmark run, stratified by the judge's verdict
(:mod:`prefect_agentenv.results.judges.label_sampling`), and for each one pauses with a typed form: one
``pass``/``fail`` choice and one note per judged criterion, under a description that shows the
task run's prompt, the agent's reply and the criteria. The judge's own verdict is not shown, so
it cannot sway the reviewer. Each answer is saved at once as a new version of the run's labels
(:mod:`prefect_agentenv.results.judges.labels`, ``source: ui``); a criterion left blank is not labelled.
``prefect-agentenv calibrate RUN`` then reads them with any labels imported from files.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import apause_flow_run
from prefect.input import RunInput
from prefect.states import Completed, Failed, State
from pydantic import Field, create_model

from prefect_agentenv.artifacts import ArtifactBackend, get_artifact_store
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.results.judges.calibration import run_judgements, stored_report
from prefect_agentenv.results.judges.label_pool import plural
from prefect_agentenv.results.judges.label_sampling import LabellingSample, sample_for_labelling
from prefect_agentenv.results.judges.label_template import criteria_texts
from prefect_agentenv.results.judges.labels import HumanLabel, save_labels
from prefect_agentenv.results.rows import TaskResult
from prefect_agentenv.results.store.run_lookup import FoundRun, find_run
from prefect_agentenv.results.store.scoring_store import read_version

__all__ = ["label_judged_run"]

_CLIP = 3000
"""Characters of the prompt and of the reply shown in a form's description."""


class CriterionLabels(RunInput):
    """The base of each task run's form; its fields (``criterion_<n>``, ``note_<n>``) are made per task run."""


@flow(name="label-judged-run", flow_run_name="label {run} by {reviewer}", persist_result=False)
async def label_judged_run(run: str, reviewer: str, n: int = 10, seed: int = 0, timeout_seconds: int = 86_400,
                           poll_interval_seconds: int = 10) -> State:
    """Pause once per sampled task run with a form for a person to label its judged criteria.

    Args:
        run: The benchmark run: `<slug>/<run id>`, a run id, or `<slug>` for its latest finished run.
        reviewer: Who labels (kept with every label).
        n: How many task runs to sample, stratified by the judge's verdict.
        seed: The sampling seed: a second reviewer given the same seed labels the same task runs.
        timeout_seconds: How long each form waits for an answer before the flow stops.
        poll_interval_seconds: How often a paused run checks for the answer.
    """
    logger = get_run_logger()
    with get_artifact_store() as store:
        try:
            found, results = await asyncio.to_thread(_run_of, store, run)
            judged = await asyncio.to_thread(run_judgements, store, results)
        except ArtifactError as exc:  # a user mistake: no traceback
            logger.error("%s", exc)
            return Failed(message=str(exc))
        samples = sample_for_labelling(judged, n, seed=seed)
        by_key = {r.run_key: r for r in results}
        labelled = 0
        for number, sample in enumerate(samples, start=1):
            form = _form(sample)
            description = await asyncio.to_thread(_description, store, found, by_key.get(sample.key), sample,
                                                  number, len(samples))
            try:
                answer = await apause_flow_run(wait_for_input=form.with_initial_data(description=description),
                                               timeout=timeout_seconds, poll_interval=poll_interval_seconds,
                                               key=f"label-{number}")
            except FlowPauseTimeout:
                message = f"no answer to task run {number} of {len(samples)} within {timeout_seconds}s"
                logger.error("%s; %s saved", message, plural(labelled, "label was", "labels were"))
                return Failed(message=message)
            labels = _labels(answer, sample, reviewer)
            if labels:
                await asyncio.to_thread(save_labels, store, found.slug, found.run_id, labels)
                labelled += len(labels)
    summary = (f"{plural(labelled, 'label')} from {reviewer} on {plural(len(samples), 'task run')} of "
               f"{found.slug}/{found.run_id}; calibrate with `prefect-agentenv calibrate {found.slug}/{found.run_id} "
               "--record`.")
    await acreate_markdown_artifact(markdown=summary, key="judge-labels")
    return Completed(message=summary, data={"labels": labelled, "task_runs": len(samples)})


def _run_of(store: ArtifactBackend, ref: str) -> tuple[FoundRun, list[TaskResult]]:
    found = find_run(store, ref)
    return found, read_version(store, found.slug, found.run_id)


def _form(sample: LabellingSample) -> type[CriterionLabels]:
    """A form with a pass/fail choice and a note for each judged criterion of the task run."""
    fields: dict[str, Any] = {}
    for index, criterion in enumerate(sample.criteria, start=1):
        name = f"{criterion.verifier_id} / {criterion.criterion_id}"
        fields[f"criterion_{index}"] = (Literal["pass", "fail"] | None, Field(
            default=None, title=name, description=f"Is '{name}' met? Leave it blank to not label it.",
            json_schema_extra=_one_select))
        fields[f"note_{index}"] = (str, Field(default="", title=f"Note on {name}", description="Why (optional)."))
    return create_model("CriterionLabels", __base__=CriterionLabels, **fields)


def _one_select(schema: dict[str, Any]) -> None:
    """Offer an optional verdict as one pass/fail select, left blank for no label.

    The Prefect UI renders the ``anyOf`` of an optional value as a ``str``/``None`` type switch a
    reviewer should not have to read, and checks a ``null`` default against the enum (a blank select
    would refuse the form); without a default in the schema a blank one is left out of the answer
    and the model reads it as None.
    """
    for key in ("anyOf", "default"):
        schema.pop(key, None)
    schema.update(type="string", enum=["pass", "fail"])


def _labels(answer: RunInput, sample: LabellingSample, reviewer: str) -> list[HumanLabel]:
    """The labels of one answered form, tied to the criteria as the run graded them."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    values = answer.model_dump()
    labels = []
    for index, criterion in enumerate(sample.criteria, start=1):
        verdict = values.get(f"criterion_{index}")
        if verdict not in ("pass", "fail"):
            continue
        labels.append(HumanLabel(
            task_id=criterion.task_id, seed_index=criterion.seed_index, epoch=criterion.epoch, cell=criterion.cell,
            verifier_id=criterion.verifier_id, criterion_id=criterion.criterion_id, label=verdict,
            note=values.get(f"note_{index}") or None, reviewer=reviewer, criteria_hash=criterion.setup.criteria,
            labelled_at=now, source="ui"))
    return labels


def _description(store: ArtifactBackend, found: FoundRun, result: TaskResult | None, sample: LabellingSample,
                 number: int, total: int) -> str:
    """What the reviewer reads above the form: the task run, its prompt and reply, the criteria."""
    key = sample.key
    lines = [f"### Task run {number} of {total}: `{key.label()}`", ""]
    report = stored_report(store, result.report_url if result else None)
    if report is not None:
        for response in report.context.prompt_responses.values():
            lines += ["**Prompt**", "", _quote(response.prompt), "", "**Reply**", "", _quote(response.response), ""]
    texts = criteria_texts(store, found.slug, found.run_id, key.task_id, key.seed_index)
    lines += ["**Criteria**", ""]
    lines += [f"{i}. `{c.verifier_id} / {c.criterion_id}` — {texts.get((c.verifier_id, c.criterion_id), '')}"
              for i, c in enumerate(sample.criteria, start=1)]
    if result is not None and result.report_url:
        lines += ["", f"The whole run: [report.json]({store.browser_url(result.report_url) or result.report_url})"]
    return "\n".join(lines)


def _quote(text: str | None) -> str:
    body = (text or "")[:_CLIP] + ("…" if text and len(text) > _CLIP else "")
    return "\n".join(f"> {line}" for line in body.splitlines()) or "> (empty)"
