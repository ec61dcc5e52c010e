"""The judge setups a benchmark's rubric verifiers will grade under, worked out before any task run starts.

``--require-calibrated-judge K`` should refuse a run before it spends anything on models. A rubric
verifier's judge setup (:mod:`prefect_agentenv.grading.judge_setup`) is its judges' models and
prompts, its criteria and its panel rule; all of them follow from the task document, the run's
overrides (``judge_model``, ``judge_agent_id``) and the configured model endpoint, except the model
of a judge that is an agent the task deploys itself (``agent_name``): that one is known only once
the agent runs, so such a verifier is checked after its task runs, as every verifier used to be.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.documents.compile import ExpandedTask
from prefect_agentenv.grading.judge_setup import JudgeSetup
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.steps.rubrics_verifier import RubricsVerifierStep, judges_of, setup_of

__all__ = ["PlannedSetup", "planned_setups"]

_ModelOf = Callable[[str, str | None], Awaitable[str | None]]
"""``await model_of(role, model)``: the model a judge of that role asking for that model answers as."""


class PlannedSetup(BaseModel):
    """A rubric verifier of one task and the setup it will grade under (None: known only at run time)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    verifier_id: str
    setup: JudgeSetup | None
    unknown: str | None = None
    """Why the setup cannot be known before the task runs."""


async def planned_setups(tasks: Iterable[ExpandedTask], overrides: Iterable[Mapping[str, str]]) -> list[PlannedSetup]:
    """Every rubric verifier's setup under each overrides (a sweep's cells), each distinct one once.

    Raises:
        ConfigurationError: the model endpoint's block cannot be read, or an override key is unknown.
    """
    from prefect_agentenv.resolution.models import resolve_model_endpoint

    models: dict[tuple[str, str | None], str | None] = {}

    async def model_of(role: str, model: str | None) -> str | None:
        if (role, model) not in models:
            models[role, model] = (await resolve_model_endpoint(role, model=model)).model
        return models[role, model]

    planned: dict[tuple[str, str, str | None, str | None], PlannedSetup] = {}
    task_list = list(tasks)
    for given in overrides:
        run = RunOverrides.parse(given)
        for task in task_list:
            for step in task.document.steps:
                if not isinstance(step, RubricsVerifierStep):
                    continue
                one = await _plan(task.task_id, step, run, model_of)
                fingerprint = one.setup.fingerprint if one.setup is not None else None
                planned.setdefault((task.task_id, step.verifier_id, fingerprint, one.unknown), one)
    return list(planned.values())


async def _plan(task_id: str, step: RubricsVerifierStep, run: RunOverrides, model_of: _ModelOf) -> PlannedSetup:
    """One verifier's setup: each judge's model as the step would resolve it when it grades."""
    from prefect_agentenv.run_services.agents import MODEL_ROLE_OF

    judges = []
    for judge in judges_of(step, run):
        if judge.agent_name is not None:
            return PlannedSetup(task_id=task_id, verifier_id=step.verifier_id, setup=None,
                                unknown=f"its judge {judge.id!r} is the deployed agent {judge.agent_name!r}, whose "
                                        "model is known only once the task runs")
        role = "judge" if judge.mode == "model" else MODEL_ROLE_OF.get(judge.agent_id, "judge")
        judges.append((judge.id, await model_of(role, judge.model), judge.policy))
    rule = step.panel_rule if step.judges is not None else None
    return PlannedSetup(task_id=task_id, verifier_id=step.verifier_id, setup=setup_of(step, judges, rule))
