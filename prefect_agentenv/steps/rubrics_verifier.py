"""rubrics_verifier: a judge grades a reply against criteria written in plain language."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import DeployedAgent, PromptResponse, RunContext, VerificationRow
from prefect_agentenv.exceptions import AgentEnvError, JudgeOutputError, NotInContextError, StepError
from prefect_agentenv.grading.panel import JudgeRecord, PanelRecord, combine_panel
from prefect_agentenv.grading.verification import Verification, prompt_error, scored, skip_reason, skipped
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.agents import a2a_client, deployed_agent, model_for, start_agent
from prefect_agentenv.run_services.clients import artifact_store, http_client, read_record
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import AgentRef, PromptRef, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.grading.judge_setup import JudgeSetup
    from prefect_agentenv.grading.judging import Ask
    from prefect_agentenv.runtime.resources.overrides import RunOverrides

logger = logging.getLogger("prefect_agentenv.judge")


class Criterion(BaseModel):
    """One thing the judge checks."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    id: str = Field(min_length=1)
    """Unique id of the criterion within the verifier."""
    criterion: str = Field(min_length=1)
    """What must be true, in plain language."""
    weight: float = 1.0
    """Weight in weighted_average; a negative weight is a penalty."""
    axis: str | None = None
    """Reporting axis (correctness, communication, …) for benchmark breakdowns."""


class PanelJudge(BaseModel):
    """One judge of a panel: an agent (deployed, or started for the step) or a model called directly."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """The judge's name in rows, reports and calibration."""
    mode: Literal["agent", "model"] = "model"
    """'model' calls the judge model directly; 'agent' asks a judge agent."""
    model: str | None = None
    """The judge's model; the step's judge_model (or the run's judge model) when omitted."""
    agent_name: AgentRef | None = None
    """A deployed agent to judge with (mode 'agent'); otherwise a judge agent is started for the step."""
    judge_agent_id: str | None = None
    """Registry id of the judge agent started for this judge; the step's judge_agent_id when omitted."""
    instructions: str | None = None
    """Grading instructions for this judge only, after the step's grading_policy_prompt."""


class RubricsVerifierStep(VerifierStep):
    """Grades the PromptResponse named by prompt_id with a judge agent or a judge model."""

    type: Literal["rubrics_verifier"] = "rubrics_verifier"
    prompt_id: PromptRef
    """The PromptResponse to grade."""
    criteria: list[Criterion] = Field(min_length=1)
    """What the judge grades, one row each."""
    agent_name: AgentRef | None = None
    """A deployed agent to judge with; when omitted a judge agent is deployed for this step."""
    judge_agent_id: str = "judge"
    """Registry id of the judge agent deployed when agent_name is omitted."""
    judge_mode: Literal["agent", "model"] = "agent"
    """'model' calls the judge model directly, without an agent (faster, cannot open files)."""
    judge_model: str | None = None
    """Model of the judge (agent or direct call); the run's judge model when omitted."""
    output_format: Literal["rubric_binary", "rubric_partial"] = "rubric_binary"
    """rubric_binary: each criterion passes or fails; rubric_partial: the judge gives a score from 0 to 1."""
    use_trajectory: bool = True
    """Show the judge the agent's trajectory as well as its reply."""
    trajectory_filter: list[str] | None = None
    """Only these trajectory event kinds are shown to the judge."""
    grading_policy_prompt: str | None = None
    """Extra grading instructions for the judge."""
    context_facts_for_judge: list[str] | str | None = None
    """Facts the judge may rely on (for example the seeded data)."""
    judge_timeout_seconds: float = Field(default=600, gt=0)
    """Bound on each answer of the judge (a corrective retry gets its own)."""
    judge_retries: int = Field(default=3, ge=0, le=10)
    """Corrective retries when the judge's output cannot be parsed."""
    judges: list[PanelJudge] | None = Field(default=None, min_length=1)
    """A panel: each judge grades every criterion independently, in parallel, and panel_rule
    combines them; a criterion no judge answered readably is unscored (neither pass nor fail)."""
    panel_rule: Literal["majority", "unanimous", "mean"] = "majority"
    """How a panel's verdicts combine per criterion: most judges, every judge, or the mean score."""

    @field_validator("judges")
    @classmethod
    def _judge_ids_unique(cls, judges: list[PanelJudge] | None) -> list[PanelJudge] | None:
        ids = [j.id for j in judges or []]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"panel judge ids repeat: {', '.join(repeated)}; give each judge its own id")
        return judges

    accepted_but_ignored = (
        "effort", "max_thinking_tokens", "judge_sandbox_type", "judge_priority", "default_model_api_base",
        "grade_up_to_turn", "run_context_for_judge", "judge_batch_size", "judge_batch_concurrency",
    )
    reference_aliases = {"default_model": "judge_model", "judge_a2a_agent_id": "judge_agent_id"}

    reference_fields = {"use_agent_judge": "AgentEnv's judge choice, read as judge_mode (agent or model)."}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv's ``use_agent_judge`` flag is judge_mode; nulls mean the defaults."""
        data = super().reference_forms(data, notices)
        if "use_agent_judge" in data:
            flag = data.pop("use_agent_judge")
            if flag is not None:
                data.setdefault("judge_mode", "agent" if flag else "model")
        for name in ("judge_agent_id", "judge_model", "judge_timeout_seconds", "output_format", "agent_name"):
            if name in data and data[name] is None:
                del data[name]
        return data


async def run(step: RubricsVerifierStep, ctx: RunContext) -> RunContext:
    """Skip or short-circuit when the reply cannot be graded; otherwise ask the judge and fold its rows."""
    response = ctx.prompt_responses.get(step.prompt_id)
    if response is None:
        raise NotInContextError(f"Prompt '{step.prompt_id}' not found in context.prompt_responses",
                                step=step)
    verifications = ctx.metadata.verifications
    reason = skip_reason(response, skip_on_truncated=step.skip_on_truncated, skip_on_timeout=step.skip_on_timeout)
    if reason:
        # The axes it would have scored: a benchmark counts them 0 under skip_policy zero.
        axes = list(dict.fromkeys(c.axis for c in step.criteria if c.axis))
        verifications[step.verifier_id] = skipped(reason, weight=step.weight, fmt=step.output_format,
                                                  axes=axes or None)
        return ctx
    if response.error:
        verifications[step.verifier_id] = prompt_error(response, weight=step.weight, fmt=step.output_format)
        return ctx
    if step.judges is not None:
        verifications[step.verifier_id] = await grade_with_panel(step, ctx, response)
    else:
        verifications[step.verifier_id] = await _grade(step, ctx, response)
    return ctx


async def _grade(step: RubricsVerifierStep, ctx: RunContext, response: PromptResponse) -> Verification:
    from prefect_agentenv.grading.judging import run_judge

    run_ = current_run()
    trajectory = await _trajectory(run_, step, response)
    judge = await _Judge.open(step, ctx)
    try:
        result = await run_judge(
            judge.ask, prompt=response.prompt, reply=response.response, trajectory=trajectory,
            criteria=step.criteria, output_format=step.output_format, grading_policy=step.grading_policy_prompt,
            context_facts=step.context_facts_for_judge, files=judge.files, retries=step.judge_retries)
        # Read the judge's trajectory before a judge deployed for this step is stopped.
        judge_info = {**judge.describe(), "attempts": result.attempts,
                      "trajectory": await judge.store_trajectory(run_, step)}
    except JudgeOutputError as exc:
        ctx.metadata.verifications[step.verifier_id] = Verification.written(
            format=step.output_format, results=[], score=None, weight=step.weight,
            error=str(exc), raw_outputs=getattr(exc, "raw_outputs", []), judge=judge.describe())
        raise StepError(f"the judge's output could not be read after {step.judge_retries} corrective "
                        f"retries: {exc}", step=step, context=ctx) from exc
    except AgentEnvError as exc:
        raise StepError(f"judging failed: {exc}", step=step) from exc
    finally:
        await judge.close()
    rows = [row.model_copy(update={"axis": c.axis}) if c.axis else row for row, c in zip(result.rows, step.criteria)]
    setup = setup_of(step, [("judge", judge.model, step.grading_policy_prompt)], None)
    return scored(rows, aggregator=step.score_aggregator, weight=step.weight, fmt=step.output_format,
                  judge=judge_info, judge_setup=setup.model_dump(mode="json"))


class JudgeChoice(NamedTuple):
    """One judge of a step as its fields and the run's overrides decide it, before it is asked: what a
    grading uses and what a benchmark works its judge setup out from before any task run starts."""

    id: str
    mode: Literal["agent", "model"]
    agent_name: str | None
    """A deployed agent that judges (its model is known only once it runs)."""
    model: str | None
    """The model asked for (None: the configured endpoint's model for the judge role)."""
    agent_id: str
    """Registry id of the judge agent started for the step (mode ``agent`` without ``agent_name``)."""
    policy: str | None
    """The grading policy its prompt carries (the step's, then a panel judge's own instructions)."""
    member: PanelJudge | None = None


def judges_of(step: RubricsVerifierStep, overrides: RunOverrides) -> list[JudgeChoice]:
    """The step's judge, or each judge of its panel, with the step's and the run's fallbacks applied."""
    if step.judges is None:
        return [JudgeChoice("judge", step.judge_mode, step.agent_name, step.judge_model or overrides.judge_model,
                            overrides.judge_agent_id or step.judge_agent_id, step.grading_policy_prompt)]
    return [JudgeChoice(m.id, m.mode, m.agent_name, m.model or step.judge_model or overrides.judge_model,
                        overrides.judge_agent_id or m.judge_agent_id or step.judge_agent_id, _policy(step, m), m)
            for m in step.judges]


def setup_of(step: RubricsVerifierStep, judges: list[tuple[str, str | None, str | None]],
             rule: str | None) -> JudgeSetup:
    """The judge setup of this grading from ``(judge id, model, grading policy)`` triples."""
    from prefect_agentenv.grading.judge_setup import SINGLE_JUDGE, JudgeIdentity, judge_setup, prompt_hash

    identities = [JudgeIdentity(id=jid, model=model, prompt=prompt_hash(step.output_format, policy,
                                                                        use_trajectory=step.use_trajectory))
                  for jid, model, policy in judges]
    return judge_setup(identities, step.criteria, rule or SINGLE_JUDGE)


async def _trajectory(run_: RunResources, step: RubricsVerifierStep, response: PromptResponse) -> Any:
    """The graded agent's trajectory events (filtered), or None when not used or not stored."""
    if not step.use_trajectory or not response.trajectory:
        return None
    data = await read_record(run_, response.trajectory)
    if data is None:
        return None
    events = json.loads(data).get("events", [])
    if step.trajectory_filter:
        events = [e for e in events if isinstance(e, dict) and e.get("kind") in step.trajectory_filter]
    return events


class JudgeDescription(TypedDict, total=False):
    """Who graded, as the verification's ``judge`` record names it (keys in the order written)."""

    id: str
    mode: Required[Literal["model", "agent"]]
    model: Required[str | None]
    mock: Required[bool]
    agent_name: str
    a2a_agent_id: str | None
    files: list[str]


class _Judge:
    """Who grades: a deployed agent, a judge agent started for this step, or the judge model."""

    def __init__(self, step: RubricsVerifierStep, ask: Ask, *, agent: DeployedAgent | None, own: bool,
                 model: str | None, is_mock: bool, files: list[str], member: PanelJudge | None = None) -> None:
        self.step, self.ask, self.agent, self.own = step, ask, agent, own
        self.model, self.is_mock, self.files, self.member = model, is_mock, files, member

    @classmethod
    async def open(cls, step: RubricsVerifierStep, ctx: RunContext, member: PanelJudge | None = None) -> _Judge:
        """The step's own judge, or a panel ``member`` whose unset fields fall back to the step's."""
        from prefect_agentenv.grading.judging import AgentAsk, model_ask

        run_ = current_run()
        choice = next(c for c in judges_of(step, run_.overrides) if member is None or c.id == member.id)
        agent_name, model = choice.agent_name, choice.model
        if choice.mode == "model" and agent_name is None:
            endpoint = await model_for(run_, "judge", model)
            ask = model_ask(endpoint.client(http=http_client(run_)), endpoint.model,
                            timeout=step.judge_timeout_seconds)
            return cls(step, ask, agent=None, own=False, model=endpoint.model, is_mock=endpoint.is_mock, files=[],
                       member=member)
        if agent_name is not None:
            agent, own = deployed_agent(ctx, agent_name, step), False
        else:
            suffix = f"-{member.id}" if member is not None else ""
            agent, _ = await start_agent(step, agent_name=f"judge-{step.id}{suffix}", a2a_agent_id=choice.agent_id,
                                         role="judge", model=model, extra_env=step.scoring_env)
            own = True
        files = [f"{entry.folder.rstrip('/')}/{name}" for entry in ctx.metadata.loaded_file_artifact_universes
                 if entry.agent_name == agent.agent_name for name in entry.files]
        ask = AgentAsk(a2a_client(run_, agent), timeout_seconds=step.judge_timeout_seconds)
        return cls(step, ask, agent=agent, own=own, model=agent.model, is_mock=agent.model == "mock", files=files,
                   member=member)

    def describe(self) -> JudgeDescription:
        mode: Literal["model", "agent"] = "model" if self.agent is None else "agent"
        out: JudgeDescription = {"mode": mode, "model": self.model, "mock": self.is_mock}
        if self.member is not None:
            out["id"] = self.member.id
        if self.agent is not None:
            out["agent_name"], out["a2a_agent_id"] = self.agent.agent_name, self.agent.a2a_agent_id
        if self.files:
            out["files"] = self.files
        return out

    async def store_trajectory(self, run_: RunResources, step: RubricsVerifierStep) -> str | None:
        """Keep the judge agent's own trajectory next to the graded one."""
        from prefect_agentenv.grading.judging import AgentAsk
        from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

        if not isinstance(self.ask, AgentAsk) or not self.ask.replies or self.agent is None:
            return None
        last = self.ask.replies[-1]
        try:
            ext = await AgentEnvExtensions.of(a2a_client(run_, self.agent))
            trajectory = await ext.get_trajectory(context_id=last.context_id) if last.context_id else \
                await ext.get_trajectory(task_id=last.task_id)
        except AgentEnvError as exc:
            logger.info("no trajectory from the judge %s: %s", self.agent.agent_name, exc)
            return last.trajectory
        store = await artifact_store(run_)
        suffix = f"-{self.member.id}" if self.member is not None else ""
        key = f"{run_.run_id}/judges/{step.verifier_id}{suffix}.json"
        body = json.dumps(trajectory.model_dump(mode="json", exclude={"raw"}), indent=1, default=str)
        return await asyncio.to_thread(store.put_object, key, body)

    async def close(self) -> None:
        """A judge deployed for this step is stopped as soon as the grading is done."""
        if not self.own or self.agent is None:
            return
        registry = current_run().teardown
        for entry in registry.pending(kind="agent"):
            if entry.key == self.agent.agent_name:
                await registry.stop(entry)


class _MemberGrading(BaseModel):
    """What one panel judge made of the criteria."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings)

    judge: JudgeRecord
    """Who judged, with its attempts and trajectory."""
    rows: dict[str, VerificationRow]
    """Its readable verdicts by criterion id."""
    unreadable: str | None = None
    """Why its last answer could not be read, when it could not."""
    raw_outputs: list[str] = Field(default_factory=list)
    """Its answers, kept when one could not be read."""
    failure: str | None = None
    """The judge could not be asked at all (deploy, timeout, protocol)."""


async def grade_with_panel(step: RubricsVerifierStep, ctx: RunContext, response: PromptResponse) -> Verification:
    """Every panel judge grades every criterion in parallel; the panel rule folds their verdicts."""
    assert step.judges is not None
    trajectory = await _trajectory(current_run(), step, response)
    graded = await asyncio.gather(*(_ask_member(step, ctx, response, trajectory, m) for m in step.judges))
    failed = [(m.id, g.failure) for m, g in zip(step.judges, graded) if g.failure is not None]
    if failed:
        raise StepError("judging failed: " + "; ".join(f"judge {jid!r}: {why}" for jid, why in failed), step=step)
    outcome = combine_panel([c.id for c in step.criteria], {c.id: c.weight for c in step.criteria},
                            {m.id: g.rows for m, g in zip(step.judges, graded)}, step.panel_rule,
                            {m.id: g.unreadable for m, g in zip(step.judges, graded) if g.unreadable})
    axes = {c.id: c.axis for c in step.criteria if c.axis}
    rows = [row.model_copy(update={"axis": axes[row.id]}) if row.id in axes else row for row in outcome.rows]
    panel = PanelRecord(rule=step.panel_rule, judges=[g.judge for g in graded],
                        disagreement=outcome.disagreement,
                        split_criteria=outcome.split_criteria, unscored=outcome.unscored,
                        unreadable_judges=[m.id for m, g in zip(step.judges, graded) if g.unreadable])
    setup = setup_of(step, [(m.id, g.judge.model, _policy(step, m)) for m, g in zip(step.judges, graded)],
                   step.panel_rule)
    extra = {"panel": panel.model_dump(mode="json"), "judge_setup": setup.model_dump(mode="json")}
    if not rows:
        return skipped("unscored", weight=step.weight, fmt=step.output_format, **extra)
    return scored(rows, aggregator=step.score_aggregator, weight=step.weight, fmt=step.output_format, **extra)


def _policy(step: RubricsVerifierStep, member: PanelJudge) -> str | None:
    """The step's grading policy, then the member's own instructions."""
    return "\n\n".join(p for p in (step.grading_policy_prompt, member.instructions) if p) or None


async def _ask_member(step: RubricsVerifierStep, ctx: RunContext, response: PromptResponse, trajectory: Any,
                      member: PanelJudge) -> _MemberGrading:
    """One judge's grading; an answer still unreadable after the corrective retries leaves the
    criteria it did not grade readably unscored, instead of failing the panel."""
    from prefect_agentenv.grading.judging import run_judge

    policy = _policy(step, member)
    judge: _Judge | None = None
    try:
        judge = await _Judge.open(step, ctx, member)
        try:
            result = await run_judge(
                judge.ask, prompt=response.prompt, reply=response.response, trajectory=trajectory,
                criteria=step.criteria, output_format=step.output_format, grading_policy=policy,
                context_facts=step.context_facts_for_judge, files=judge.files, retries=step.judge_retries)
        except JudgeOutputError as exc:
            logger.info("judge %s of %s: unreadable after %d retries: %s", member.id, step.id, step.judge_retries, exc)
            return _MemberGrading(judge=JudgeRecord.model_validate(
                {**judge.describe(), "attempts": step.judge_retries + 1}),
                                  rows={r.id: r for r in exc.partial_rows}, unreadable=str(exc),
                                  raw_outputs=exc.raw_outputs)
        described = JudgeRecord.model_validate({**judge.describe(), "attempts": result.attempts,
                                                "trajectory": await judge.store_trajectory(current_run(), step)})
        return _MemberGrading(judge=described, rows={r.id: r for r in result.rows})
    except AgentEnvError as exc:
        return _MemberGrading(judge=JudgeRecord(id=member.id), rows={}, failure=str(exc))
    finally:
        if judge is not None:
            await judge.close()


definition = StepDefinition(RubricsVerifierStep, run)
