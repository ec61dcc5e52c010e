"""register_agent_triggers validation: an env a trigger's condition names must be deployed by an ancestor."""

from __future__ import annotations

from prefect_agentenv.documents import validate_data

AGENT = {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "boss"}


def trigger(env_id: str) -> dict[str, object]:
    return {"id": "on-mail", "when": {"type": "any", "of": [{"type": "env_trigger", "env_id": env_id,
                                                             "trigger_id": "mail-1"}]},
            "actions": [{"type": "say", "text": "Did you see my email?"}]}


def test_an_env_trigger_condition_needs_its_env_deployed_by_an_ancestor() -> None:
    result = validate_data([AGENT, {"id": "t", "type": "register_agent_triggers", "agent_name": "boss",
                                    "triggers": [trigger("email")]}])

    [problem] = result.problems
    assert problem.path == "$[1].triggers[0].when.of[0].env_id"
    assert "env 'email' is not provided by any ancestor step" in problem.message


def test_with_the_env_deployed_the_triggers_validate_and_ids_must_be_unique() -> None:
    env = {"id": "email", "type": "deploy_env", "env_id": "email"}
    assert validate_data([env, AGENT, {"id": "t", "type": "register_agent_triggers", "agent_name": "boss",
                                       "triggers": [trigger("email")]}]).ok

    result = validate_data([env, AGENT, {"id": "t", "type": "register_agent_triggers", "agent_name": "boss",
                                         "triggers": [trigger("email"), trigger("email")]}])
    assert "trigger ids must be unique" in result.problems[0].message
