"""verify_env_card and verify_a2a_core_protocol as documents write them (the runs are in tests/conformance)."""

from __future__ import annotations

from prefect_agentenv.documents import validate_data

DEPLOYS = [{"id": "env", "type": "deploy_env", "env_id": "email"},
           {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant"}]


def test_the_verifier_id_defaults_to_the_step_id() -> None:
    result = validate_data([*DEPLOYS, {"id": "card", "type": "verify_env_card", "env_id": "email"},
                            {"id": "a2a", "type": "verify_a2a_core_protocol", "agent_name": "assistant"}])

    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    assert [getattr(s, "verifier_id", None) for s in result.document.steps[2:]] == ["card", "a2a"]


def test_the_agentenv_form_names_the_agent_by_registry_id_and_its_prompt_id_is_accepted() -> None:
    result = validate_data([*DEPLOYS, {"id": "a2a", "type": "verify_a2a_core_protocol", "a2a_agent_id": "scripted",
                                       "prompt_id": "p1"}])

    assert result.ok, [p.render() for p in result.problems]
    assert any("prompt_id" in w.render() for w in result.warnings)


def test_a_probe_naming_no_agent_or_an_env_no_step_deployed_is_invalid() -> None:
    result = validate_data([*DEPLOYS, {"id": "a2a", "type": "verify_a2a_core_protocol"},
                            {"id": "card", "type": "verify_env_card", "env_id": "crm"}])

    rendered = " ".join(p.render() for p in result.problems)
    assert not result.ok
    assert "agent_name" in rendered and "crm" in rendered
