"""Run overrides (``--override KEY=VALUE``, a flow's ``overrides``): parsed once when a run starts.

A key this runner does not know is refused with a did-you-mean before anything is deployed, so a
typo such as ``judge_modle`` cannot silently run the task with the document's own settings.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from prefect_agentenv.exceptions import ConfigurationError

RUN_KEYS: dict[str, str] = {
    "a2a_agent_id": "the agent every deploy_agent step runs (a registered agent or a reference agent)",
    "model": "the model of every agent that takes one",
    "agent_config": "a JSON object merged into every agent's config (e.g. a scripted agent's plan)",
    "judge_model": "the model of every rubric judge",
    "judge_agent_id": "the agent that judges rubrics",
    "verify_python": "the Python that runs env_outcome_verifier scripts",
    "human_a2a_url": "the A2A endpoint of the person a deploy_human_agent step talks to",
    "limit_tokens": "the most input plus output tokens the run's model calls may use (its limits.tokens)",
    "limit_output_tokens": "the most output tokens the run's model calls may use (its limits.output_tokens)",
    "limit_cost_usd": "the most US dollars the run's model calls may cost (its limits.cost_usd)",
    "limit_model_calls": "the most model calls the run may make (its limits.model_calls)",
    "limit_seconds": "the most seconds the run may call models for (its limits.seconds)",
}
"""Keys that apply to the whole run, and what each overrides."""
AGENT_KEYS = ("a2a_agent_id", "agent_config")
"""Keys that may also be given for one agent: ``<agent_name>.<key>``."""
FREE_FORM_KEYS = ("agent_config", "human_a2a_url")
"""Keys whose values are free text that may carry a credential (a token in a URL, a key in a
config): results record them by digest only (:meth:`RunOverrides.recorded`)."""


class AgentOverrides(BaseModel):
    """What the run overrides for one agent (``<agent_name>.<key>``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a2a_agent_id: str | None = None
    agent_config: str | None = None


class RunOverrides(BaseModel):
    """A run's overrides, by meaning; :meth:`parse` reads them from ``KEY=VALUE`` pairs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a2a_agent_id: str | None = None
    model: str | None = None
    agent_config: str | None = None
    judge_model: str | None = None
    judge_agent_id: str | None = None
    verify_python: str | None = None
    human_a2a_url: str | None = None
    limit_tokens: int | None = Field(default=None, gt=0)
    limit_output_tokens: int | None = Field(default=None, gt=0)
    limit_cost_usd: float | None = Field(default=None, gt=0)
    limit_model_calls: int | None = Field(default=None, gt=0)
    limit_seconds: float | None = Field(default=None, gt=0)
    agents: dict[str, AgentOverrides] = {}
    """Per-agent overrides by agent name."""
    _given: dict[str, str] = PrivateAttr(default_factory=dict)

    @classmethod
    def parse(cls, given: Mapping[str, str] | None) -> RunOverrides:
        """Read ``KEY=VALUE`` pairs.

        Raises:
            ConfigurationError: a key this runner does not know (with the closest known key).
        """
        fields: dict[str, str] = {}
        agents: dict[str, dict[str, str]] = {}
        unknown: list[str] = []
        for key, value in (given or {}).items():
            name, _, agent_key = key.rpartition(".")
            if key in RUN_KEYS:
                fields[key] = str(value)
            elif name and agent_key in AGENT_KEYS:
                agents.setdefault(name, {})[agent_key] = str(value)
            else:
                unknown.append(key)
        if unknown:
            raise ConfigurationError("; ".join(_unknown(key) for key in unknown))
        try:
            parsed = cls.model_validate({**fields, "agents": {name: AgentOverrides(**values) for name, values in agents.items()}})
        except ValidationError as exc:
            raise ConfigurationError("; ".join(f"override '{e['loc'][0]}': {e['msg']} (got {e['input']!r})"
                                               for e in exc.errors())) from None
        parsed._given = {str(k): str(v) for k, v in (given or {}).items()}
        return parsed

    def limits(self) -> dict[str, float]:
        """The model-call limits given as overrides, by their ``limits`` field name."""
        named = {"tokens": self.limit_tokens, "output_tokens": self.limit_output_tokens,
                 "cost_usd": self.limit_cost_usd, "model_calls": self.limit_model_calls,
                 "seconds": self.limit_seconds}
        return {name: value for name, value in named.items() if value is not None}

    def agent_id(self, agent_name: str) -> str | None:
        """The agent to run as ``agent_name``: its own override first, then the run's."""
        own = self.agents.get(agent_name)
        return (own.a2a_agent_id if own else None) or self.a2a_agent_id

    def config_for(self, agent_name: str) -> str | None:
        """The JSON object to merge into ``agent_name``'s config: its own override first, then the run's."""
        own = self.agents.get(agent_name)
        return (own.agent_config if own else None) or self.agent_config

    def as_pairs(self) -> dict[str, str]:
        """The pairs as they were given (a run started from this one gets the same overrides)."""
        return dict(self._given)

    def recorded(self) -> dict[str, str]:
        """The pairs as a result records them: ids, models and paths as given; a free-form value
        (:data:`FREE_FORM_KEYS`, also per agent) as ``sha256:<16 hex digits>`` of its text, so
        two runs' configs can be told apart without a secret ever reaching a result."""
        return {key: _digest(value) if key.rpartition(".")[2] in FREE_FORM_KEYS else value
                for key, value in sorted(self._given.items())}


def _digest(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def _unknown(key: str) -> str:
    """Why ``key`` is refused, and the closest key that would have been read."""
    known = [*RUN_KEYS, *(f"<agent_name>.{k}" for k in AGENT_KEYS)]
    name, _, agent_key = key.rpartition(".")
    close = [f"{name}.{k}" for k in difflib.get_close_matches(agent_key, AGENT_KEYS, n=1)] if name else []
    close = close or difflib.get_close_matches(key, list(RUN_KEYS), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown override '{key}': {hint}the overrides are {', '.join(known)}"
