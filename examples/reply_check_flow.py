"""A flow of your own built from prefect-agentenv's step tasks (runs as is: `python examples/reply_check_flow.py`).

The scripted reference agent follows the plan in examples/plans/reply-to-dana.json; with no model
configured the judge is the built-in mock model, labelled as such in the verification.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from prefect import flow

from prefect_agentenv.context import RunContext
from prefect_agentenv.tasks import agentenv_run, deploy_agent, deploy_env, prompt_agent, rubrics_verifier

PLAN = json.loads((Path(__file__).parent / "plans" / "reply-to-dana.json").read_text())


@flow(name="reply-check")
async def reply_check(agent: str = "scripted") -> RunContext:
    """Deploy the email env and an agent, ask for the reply to Dana, grade its tone.

    Args:
        agent: The agent under test (an A2AAgent block or a reference agent).
    """
    async with agentenv_run("reply-check") as ctx:
        ctx = await deploy_env(ctx, env_id="email")
        ctx = await deploy_agent(ctx, agent_name="assistant", a2a_agent_id=agent, env_ids=["email"],
                                 agent_config=PLAN if agent == "scripted" else {})
        ctx = await prompt_agent(ctx, agent_name="assistant", prompt_id="reply", prompt="Reply to Dana.")
        ctx = await rubrics_verifier(ctx, prompt_id="reply", verifier_id="tone", criteria=[
            {"id": "polite", "criterion": "The email to Dana is polite and signed."}])
    return ctx


if __name__ == "__main__":
    result = asyncio.run(reply_check())
    print("tone score:", result.metadata.verifications["tone"].score)
