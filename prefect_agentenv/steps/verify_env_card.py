"""verify_env_card: probe a deployed env's card, data plane, MCP tools and declared extensions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from prefect_agentenv.context import RunContext
from prefect_agentenv.grading.verification import Verification, scored
from prefect_agentenv.run_services.clients import deployed_env, http_client, peer_read_timeout
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import EnvRef, Provides, VerifierStep
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.protocols.probes import ProbeReport


class VerifyEnvCardStep(VerifierStep):
    """Probes what a deployed env offers; a probe that fails (not one that is missing) scores 0."""

    type: Literal["verify_env_card"] = "verify_env_card"
    env_id: EnvRef
    """The deployed env to probe."""
    verifier_id: Annotated[str, Provides("verifier")] = Field(default="", validate_default=False)
    """Key of the results in metadata.verifications; the step id when omitted."""

    @model_validator(mode="after")
    def _verifier_id_defaults_to_the_step_id(self) -> VerifyEnvCardStep:
        if not self.verifier_id:
            self.verifier_id = self.id
        return self


async def run(step: VerifyEnvCardStep, ctx: RunContext) -> RunContext:
    """Probe the env and record one row per probe (rows that only inform weigh 0)."""
    from prefect_agentenv.protocols.probes import probe_env

    env = deployed_env(ctx, step.env_id, step)
    report = await probe_env(env.base_url or env.mcp_url.rsplit("/", 1)[0], http=http_client(current_run()),
                             name=env.env_id, mcp_url=env.mcp_url,
                             mcp_timeout=peer_read_timeout())
    ctx.metadata.verifications[step.verifier_id] = probe_verification(report, step)
    return ctx


def probe_verification(report: ProbeReport, step: VerifierStep) -> Verification:
    """A verification from a probe: ``ok`` passes, ``failed`` fails, the rest weighs 0 (information)."""
    rows = [{"id": row.check, "result": "fail" if row.status == "failed" else "pass",
             "score": 0.0 if row.status == "failed" else 1.0,
             "weight": 1.0 if row.status in ("ok", "failed") else 0.0,
             "status": row.status, "justification": row.detail} for row in report.rows]
    return scored(rows, aggregator=step.score_aggregator, weight=step.weight, fmt="probe", url=report.url, card=report.card)


definition = StepDefinition(VerifyEnvCardStep, run)
