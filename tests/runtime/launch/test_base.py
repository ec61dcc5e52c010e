"""LaunchSpec: one source per spec, templating, and secrets that stay hidden."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from prefect_agentenv.runtime.launch.base import LaunchSpec, fill_template, join_url


def test_a_spec_is_launched_by_the_launcher_of_its_source() -> None:
    assert LaunchSpec(command=["srv", "{port}"]).kind == "process"
    assert LaunchSpec(image="envs/email:1").kind == "docker"
    assert LaunchSpec(image="envs/email:1", command=["serve", "--port", "{port}"]).kind == "docker"
    assert LaunchSpec(url="https://env.example.com").kind == "url"


@pytest.mark.parametrize("fields", [{}, {"command": []}, {"url": "http://x", "command": ["srv"]},
                                    {"url": "http://x", "image": "img"}])
def test_a_spec_without_exactly_one_source_is_rejected(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        LaunchSpec.model_validate(fields)


def test_secret_values_never_appear_when_a_spec_is_printed_or_dumped() -> None:
    spec = LaunchSpec(command=["srv"], secret_env={"TOKEN": SecretStr("t0ken")})
    assert "t0ken" not in repr(spec) and "t0ken" not in spec.model_dump_json() and "t0ken" not in str(spec)
    assert spec.secret_values() == {"TOKEN": "t0ken"}


def test_templating_fills_host_and_port_and_leaves_other_braces_alone() -> None:
    assert fill_template('{"port": {port}, "host": "{host}", "x": {y}}', host="127.0.0.1", port=8123) == \
        '{"port": 8123, "host": "127.0.0.1", "x": {y}}'


def test_urls_are_joined_with_exactly_one_slash() -> None:
    assert join_url("http://h:1/", "/mcp") == "http://h:1/mcp"
    assert join_url("http://h:1/base", "mcp") == "http://h:1/base/mcp"


def test_the_defaults_follow_the_env_wire_contract() -> None:
    spec = LaunchSpec(command=["srv"])
    assert spec.ready_path == "/.well-known/agent-env.json"
    assert spec.mcp_path == "/mcp"
    assert spec.startup_timeout_seconds == 60


def test_a_launch_cannot_be_both_confined_and_unconfined_nor_confine_an_image() -> None:
    with pytest.raises(ValueError, match="contradict each other"):
        LaunchSpec(command=["agent"], kind="confined", confinement="none")
    with pytest.raises(ValueError, match="only a command can run confined"):
        LaunchSpec(image="agent:1", confinement="confined")
    assert LaunchSpec(command=["agent"], confinement="confined").kind == "confined"
