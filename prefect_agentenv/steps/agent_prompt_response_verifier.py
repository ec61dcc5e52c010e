"""agent_prompt_response_verifier: deterministic checks on a reply's text."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import PromptResponse, RunContext
from prefect_agentenv.exceptions import NotInContextError
from prefect_agentenv.grading.verification import Verification, prompt_error, scored, skip_reason, skipped
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.steps.base import PromptRef, VerifierStep, listed_field
from prefect_agentenv.steps.registry import StepDefinition


class RegexCheck(BaseModel):
    """A pattern the reply must contain."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    pattern: str
    """Python regular expression searched for in the reply."""
    flags: list[Literal["IGNORECASE", "MULTILINE", "DOTALL"]] = Field(default_factory=list)
    """Python ``re`` flags of the pattern."""


class AgentPromptResponseVerifierStep(VerifierStep):
    """Scores a reply by the substrings and patterns it contains."""

    type: Literal["agent_prompt_response_verifier"] = "agent_prompt_response_verifier"
    prompt_id: PromptRef
    """The PromptResponse to check."""
    response_contains: list[str] = Field(default_factory=list)
    """Substrings that must appear in the reply."""
    case_sensitive: bool = False
    """Whether response_contains compares case."""
    response_regex_present: list[RegexCheck] = Field(default_factory=list)
    """Regular expressions that must match somewhere in the reply."""

    reference_fields = {"criteria": "AgentEnv's criteria list (response_contains needles, response_regex_present "
                                    "patterns), read as response_contains and response_regex_present."}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv's ``criteria: [{type: response_contains, needles}, {type: response_regex_present, pattern}]``.

        Its needles compare case and its patterns default to DOTALL, so the criteria form keeps that.
        """
        data = super().reference_forms(data, notices)
        criteria = data.pop("criteria", None)
        if criteria is None:
            return data
        if not isinstance(criteria, list):
            raise ValueError("criteria must be a list of {type: response_contains | response_regex_present, ...}")
        contains = listed_field(data, "response_contains")
        patterns = listed_field(data, "response_regex_present")
        for i, item in enumerate(criteria):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "response_contains" and isinstance(item, dict):
                needles = item.get("needles")
                if not (isinstance(needles, list) and needles and all(isinstance(n, str) for n in needles)):
                    raise ValueError(f"criteria[{i}] (response_contains) needs a non-empty list of needles")
                contains += needles
            elif kind == "response_regex_present" and isinstance(item, dict):
                pattern = item.get("pattern")
                if not isinstance(pattern, str) or not pattern:
                    raise ValueError(f"criteria[{i}] (response_regex_present) needs a pattern")
                flags = item.get("flags")
                patterns.append({"pattern": pattern, "flags": ["DOTALL"] if flags is None else flags})
            else:
                raise ValueError(f"criteria[{i}]: unknown criterion type {kind!r}; known: response_contains, "
                                 "response_regex_present")
        data.setdefault("case_sensitive", True)
        return {**data, "response_contains": contains, "response_regex_present": patterns}

    @model_validator(mode="after")
    def _has_a_check(self) -> AgentPromptResponseVerifierStep:
        if not self.response_contains and not self.response_regex_present:
            raise ValueError("give response_contains or response_regex_present (nothing to check)")
        return self


async def run(step: AgentPromptResponseVerifierStep, ctx: RunContext) -> RunContext:
    """One row per needle and per pattern, folded with the step's aggregator."""
    response = ctx.prompt_responses.get(step.prompt_id)
    if response is None:
        raise NotInContextError(f"Prompt '{step.prompt_id}' not found in context.prompt_responses",
                                step=step)
    ctx.metadata.verifications[step.verifier_id] = verify_response(step, response)
    return ctx


def verify_response(step: AgentPromptResponseVerifierStep, response: PromptResponse) -> Verification:
    fmt = "response_checks"
    reason = skip_reason(response, skip_on_truncated=step.skip_on_truncated, skip_on_timeout=step.skip_on_timeout)
    if reason:
        return skipped(reason, weight=step.weight, fmt=fmt)
    if response.error:
        return prompt_error(response, weight=step.weight, fmt=fmt)
    text = response.response
    rows: list[dict[str, object]] = []
    for i, needle in enumerate(step.response_contains):
        found = needle in text if step.case_sensitive else needle.casefold() in text.casefold()
        rows.append(_row(f"contains_{i + 1}", found, f"{'found' if found else 'missing'}: {needle!r}"))
    for i, check in enumerate(step.response_regex_present):
        flags = 0
        for name in check.flags:
            flags |= getattr(re, name)
        match = re.search(check.pattern, text, flags)
        rows.append(_row(f"regex_{i + 1}", match is not None,
                         f"/{check.pattern}/ " + (f"matched {match.group(0)[:80]!r}" if match else "did not match")))
    return scored(rows, aggregator=step.score_aggregator, weight=step.weight, fmt=fmt)


def _row(row_id: str, ok: bool, why: str) -> dict[str, object]:
    return {"id": row_id, "result": "pass" if ok else "fail", "score": 1.0 if ok else 0.0, "weight": 1.0,
            "justification": why}


definition = StepDefinition(AgentPromptResponseVerifierStep, run)
