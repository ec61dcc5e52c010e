"""Where and how a task is scored: one ``scoring`` shape for task documents, benchmarks and the API.

A task document's ``scoring``, a benchmark's ``defaults.scoring`` and a benchmark task's
``scoring`` take the same fields as the Python API's ``ScoringConfig`` and the TOML
``[env.agent.scoring]`` table. Only the fields written *override* (pydantic's
``model_fields_set``): a benchmark default is overridden field by field by the document's and
then by the task's own; ``env`` is merged (the later value wins), ``network`` replaced.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.documents.graph import StepGraph
from prefect_agentenv.grading.outcome import SkipPolicy
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import StepModel, VerifierStep
from prefect_agentenv.steps.registry import get_step

SKIP_FLAGS = ("skip_on_truncated", "skip_on_timeout")

__all__ = ["NetworkPolicy", "ScoringConfig", "ScoringRetries", "SkipPolicy", "apply_skip_defaults", "fold_skip_policy",
           "merge_scoring", "runtime_step", "split_for_isolation", "verifier_steps", "with_scoring_env"]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)


class ScoringRetries(_Config):
    """Retries of isolated scoring: the same submission is scored again in a fresh runtime."""

    max_retries: int = Field(default=2, ge=0)
    """How many times a failed isolated scoring is tried again (so 1 + max_retries attempts)."""


class NetworkPolicy(_Config):
    """What the scoring processes (verify scripts, sandbox probes, judges) may reach.

    ``open`` leaves the network alone; ``loopback`` lets them reach this machine only; ``allowlist``
    adds the ``allow`` hosts. Enforced through the proxy variables those processes read
    (``HTTP(S)_PROXY``/``ALL_PROXY`` point at a closed loopback port, ``NO_PROXY`` lists what is
    allowed); a process that ignores proxy variables is not held back.
    """

    mode: Literal["open", "loopback", "allowlist"] = "open"
    allow: list[str] = Field(default_factory=list)
    """Hosts reachable besides loopback (``allowlist``)."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"mode": "loopback" if value in ("none", "deny", "loopback") else value}
        if isinstance(value, list):
            return {"mode": "allowlist", "allow": value}
        return value

    def env(self) -> dict[str, str]:
        """The variables that apply the policy to a child process."""
        if self.mode == "open":
            return {}
        blackhole = "http://127.0.0.1:9"
        allowed = ",".join(["127.0.0.1", "localhost", "::1", *self.allow])
        return {"HTTP_PROXY": blackhole, "HTTPS_PROXY": blackhole, "ALL_PROXY": blackhole,
                "http_proxy": blackhole, "https_proxy": blackhole, "all_proxy": blackhole,
                "NO_PROXY": allowed, "no_proxy": allowed}


class ScoringConfig(_Config):
    """Where and how a task is scored (docs/python-api.md, "Scoring placement")."""

    mode: Literal["shared", "isolated"] = "shared"
    """``shared``: in the agent's envs and sandbox as it left them; ``isolated``: the envs' state and
    the sandboxes' files are restored into fresh instances first."""
    runtime: JsonObject = Field(default_factory=dict)
    """deploy_env fields for the fresh envs of isolated scoring (``version``, ``startup_timeout_seconds``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables for scoring only; ``${VAR}`` and ``${VAR:-default}`` are read from this machine's
    environment when scoring starts, and never reach a report."""
    network: NetworkPolicy | None = None
    """Network policy while scoring runs (none: unchanged)."""
    retries: ScoringRetries = Field(default_factory=ScoringRetries)
    """Retries of isolated scoring; shared scoring is not retried."""
    skip_on_truncated: bool = False
    """Do not score a run cut off by a turn or token cap (in a document: every verifier's default)."""
    skip_on_timeout: bool = False
    """Do not score a run whose deadline expired (in a document: every verifier's default)."""
    skip_policy: SkipPolicy = "zero"
    """A skipped run's reward: ``zero`` (0, so it counts as a failure) or ``exclude`` (None)."""

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        """Only the fields written: a dumped layer read back still overrides only those (a task's
        ``{retries: …}`` must not become a ``mode: shared`` over the benchmark's default)."""
        data: JsonObject = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    @field_validator("runtime")
    @classmethod
    def _runtime_fields(cls, value: JsonObject) -> JsonObject:
        """A field deploy_env does not take is an error here, not when scoring starts."""
        if value:
            _deploy_env({"id": "scoring-env", "env_id": "env", **value})
        return value

    def over(self, defaults: ScoringConfig) -> ScoringConfig:
        """These settings over ``defaults``: fields set here win, env merges, network replaces."""
        merged = defaults.model_dump(exclude_unset=True)
        merged.update(self.model_dump(exclude_unset=True))
        if defaults.env or self.env:
            merged["env"] = {**defaults.env, **self.env}
        return ScoringConfig.model_validate(merged)


def runtime_step(env_id: str, version: str | None, scoring: ScoringConfig) -> StepModel:
    """The deploy_env step of a fresh scoring env: the agent's env, with ``scoring.runtime`` over it.

    Raises:
        ValueError: ``scoring.runtime`` holds a field deploy_env does not take (named).
    """
    return _deploy_env({"id": f"scoring-{env_id}", "env_id": env_id, "version": version, **scoring.runtime})


def _deploy_env(data: JsonObject) -> StepModel:
    try:
        return get_step("deploy_env").model.model_validate(data)
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None


def fold_skip_policy(policy: SkipPolicy | None, scoring: ScoringConfig) -> SkipPolicy | None:
    """The skip policy ``scoring`` writes, for a model that also has a top-level ``skip_policy``
    (``policy``, None when not written); None when scoring writes none. Afterwards
    ``scoring.skip_policy`` carries the one policy, so a dumped document reads back the same.

    Raises:
        ValueError: both are written, with different values.
    """
    written = scoring.skip_policy if "skip_policy" in scoring.model_fields_set else None
    if written is not None and policy is not None and written != policy:
        raise ValueError(f"skip_policy is '{policy}' but scoring.skip_policy is '{written}': write one of them")
    if written is None:  # carried along, not written: a later layer's policy still wins
        scoring.__dict__["skip_policy"] = policy or "zero"
    return written


def merge_scoring(*layers: ScoringConfig | None) -> ScoringConfig | None:
    """Later layers over earlier ones (a benchmark default, a document, a task); None when none is set."""
    merged: ScoringConfig | None = None
    for layer in layers:
        if layer is not None:
            merged = layer.model_copy(deep=True) if merged is None else layer.over(merged)
    return merged


def apply_skip_defaults(steps: list[StepModel], scoring: ScoringConfig) -> list[StepModel]:
    """Verifier steps with the ``skip_on_truncated`` / ``skip_on_timeout`` a document's scoring sets,
    unless they set their own. The flags are then consumed (unset in ``scoring``), so a dumped
    document reads back the same and a benchmark default is not overridden by them twice."""
    flags = {name: getattr(scoring, name) for name in SKIP_FLAGS if name in scoring.model_fields_set}
    for name in flags:
        setattr(scoring, name, False)
        scoring.__pydantic_fields_set__.discard(name)
    return [_updated(step, {k: v for k, v in flags.items() if k not in step.model_fields_set})
            if isinstance(step, VerifierStep) else step for step in steps]


def with_scoring_env(steps: list[StepModel], scoring: ScoringConfig) -> list[StepModel]:
    """Verifier steps with ``scoring.env`` and the network policy's variables in their ``scoring_env``
    (a step's own values win), still as ``${VAR}`` templates: each is resolved when its verifier
    starts, that is when scoring starts."""
    env = {**(scoring.network.env() if scoring.network else {}), **scoring.env}
    if not env:
        return steps
    return [_updated(step, {"scoring_env": {**env, **step.scoring_env}}) if isinstance(step, VerifierStep) else step
            for step in steps]


def _updated(step: StepModel, update: dict[str, bool | dict[str, str]]) -> StepModel:
    """The step with ``update`` (skip flags, scoring_env) over it, counted as written."""
    if not update:
        return step
    copy = step.model_copy(update=update)
    copy.__pydantic_fields_set__.update(update)
    return copy


def split_for_isolation(steps: list[StepModel],
                        graph: StepGraph | None = None) -> tuple[list[StepModel], list[StepModel]]:
    """The rollout (every step but the verifiers) and the scoring (the verifiers, each depending
    only on the verifiers it waited for) of a task scored in isolation: its verifiers run after
    every other step, in fresh envs. ``graph``: the steps' graph, when the caller resolved it.

    Raises:
        ValueError: a rollout step depends on a verifier (it could not run before scoring).
    """
    verifier_ids = {s.id for s in steps if isinstance(s, VerifierStep)}
    after = [f"{s.id} (after {', '.join(sorted(set(s.dependency_ids() or []) & verifier_ids))})" for s in steps
             if s.id not in verifier_ids and set(s.dependency_ids() or []) & verifier_ids]
    if after:
        raise ValueError(f"mode isolated runs the verifiers after every other step, but {'; '.join(after)} "
                         "depends on a verifier: drop that depends_on, or score in mode shared")
    return [s for s in steps if s.id not in verifier_ids], verifier_steps(steps, graph)


def verifier_steps(steps: list[StepModel], graph: StepGraph | None = None) -> list[StepModel]:
    """A task's verifiers, each depending only on the verifiers it waited for (directly or through
    other steps): what isolated scoring and a rescore run on a restored submission."""
    verifier_ids = {s.id for s in steps if isinstance(s, VerifierStep)}
    deps = (graph if graph is not None and graph.covers(steps) else StepGraph.of(steps)).deps
    return [s.model_copy(update={"depends_on": [d for d in deps[s.id] if d in verifier_ids]})
            for s in steps if s.id in verifier_ids]
