"""test_reply_words: scores a reply by the words it must use and the words it must not.

The worked plugin of docs/step-types.md (the document shows this file as it is). It takes
everything from ``prefect_agentenv.plugin``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from prefect_agentenv.plugin import (
    FieldError,
    NotInContextError,
    PromptRef,
    PromptResponse,
    RunContext,
    StepDefinition,
    Verification,
    VerifierStep,
    normalize_row,
    prompt_error,
    scored,
    skip_reason,
    skipped,
)


class ReplyWordsStep(VerifierStep):
    """Scores the reply named by prompt_id: a row per word it must use, a penalty row per word it must not."""

    type: Literal["test_reply_words"] = "test_reply_words"
    prompt_id: PromptRef
    """The reply to check (the prompt_id of an earlier prompt_agent step)."""
    must_use: list[str] = Field(default_factory=list)
    """Words the reply must use, one row each (case is ignored)."""
    must_not_use: list[str] = Field(default_factory=list)
    """Words the reply must not use, one penalty row each (weight -1)."""

    default_aggregator = "weighted_average"

    @model_validator(mode="after")
    def _names_a_word(self) -> ReplyWordsStep:
        if not self.must_use and not self.must_not_use:
            raise FieldError("give at least one word to look for", loc=("must_use",),
                             hint="list words in must_use or must_not_use")
        both = sorted({w.casefold() for w in self.must_use} & {w.casefold() for w in self.must_not_use})
        if both:
            raise FieldError(f"{', '.join(both)}: in must_use and in must_not_use", loc=("must_not_use",))
        return self


async def run(step: ReplyWordsStep, ctx: RunContext) -> RunContext:
    """Grade the reply an ancestor stored under prompt_id."""
    response = ctx.prompt_responses.get(step.prompt_id)
    if response is None:
        raise NotInContextError(f"Prompt '{step.prompt_id}' not found in context.prompt_responses", step=step)
    ctx.metadata.verifications[step.verifier_id] = grade(step, response)
    return ctx


def grade(step: ReplyWordsStep, response: PromptResponse) -> Verification:
    """Skipped when the step says so for a cut-off reply, 0 for a failed prompt, else one row per word."""
    reason = skip_reason(response, skip_on_truncated=step.skip_on_truncated, skip_on_timeout=step.skip_on_timeout)
    if reason:
        return skipped(reason, weight=step.weight, fmt="reply_words")
    if response.error:
        return prompt_error(response, weight=step.weight, fmt="reply_words")
    used = set(re.findall(r"[\w'-]+", response.response.casefold()))
    rows = [{"id": f"uses:{word}", "result": word.casefold() in used, "weight": weight,
             "justification": f"{word!r} is {'used' if word.casefold() in used else 'not used'}"}
            for words, weight in ((step.must_use, 1.0), (step.must_not_use, -1.0)) for word in words]
    return scored([normalize_row(row, i) for i, row in enumerate(rows)], aggregator=step.score_aggregator,
                  weight=step.weight, fmt="reply_words")


definition = StepDefinition(ReplyWordsStep, run)
