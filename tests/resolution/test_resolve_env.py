"""Resolving an env id: its block, else the reference env, else how to register one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.resolution.block_lookup import prefect_api_configured
from prefect_agentenv.resolution.servers import resolve_env
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.launch.docker import DockerLauncher
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.launch.registry import Launchers
from prefect_agentenv.runtime.launch.url import UrlLauncher


@pytest.fixture
def no_prefect_api() -> Iterator[None]:
    """As if PREFECT_API_URL were unset, even after the session's harness set it."""
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield


async def test_a_reference_env_resolves_to_its_module_command(no_prefect_api: None) -> None:
    assert not prefect_api_configured()
    resolved = await resolve_env("email")
    assert resolved.source == "reference"
    assert resolved.version == REFERENCE_ENVS["email"].version
    assert resolved.spec.command == REFERENCE_ENVS["email"].command()
    assert resolved.spec.kind == "process"


async def test_an_unknown_env_says_exactly_how_to_register_it(no_prefect_api: None) -> None:
    with pytest.raises(ConfigurationError) as caught:
        await resolve_env("calendar")
    message = str(caught.value)
    assert "no environment 'calendar'" in message
    assert 'prefect-agentenv env register calendar --command "python -m my_env --host {host} --port {port}"' in message
    assert "no Prefect API is configured" in message


async def test_an_env_id_that_cannot_name_a_block_says_so() -> None:
    with pytest.raises(ConfigurationError, match="'My_Env' cannot name a block"):
        await resolve_env("My_Env", use_blocks=True)


async def test_an_env_id_with_no_block_falls_back_to_the_reference_env(prefect_harness: None) -> None:
    assert prefect_api_configured()
    resolved = await resolve_env("records")
    assert resolved.source == "reference"


async def test_an_unknown_env_with_a_prefect_api_is_a_clean_configuration_error(prefect_harness: None) -> None:
    with pytest.raises(ConfigurationError, match="no environment 'nowhere-env'") as caught:
        await resolve_env("nowhere-env")
    assert "not consulted" not in str(caught.value)


def test_a_run_gets_one_launcher_per_kind() -> None:
    launchers = Launchers("run-1")
    process = launchers.for_spec(LaunchSpec(command=["srv", "{port}"]))
    assert isinstance(process, ProcessLauncher) and process.run_id == "run-1"
    assert launchers.for_spec(LaunchSpec(command=["other", "{port}"])) is process
    assert isinstance(launchers.for_spec(LaunchSpec(image="img")), DockerLauncher)
    assert isinstance(launchers.for_spec(LaunchSpec(url="http://127.0.0.1:9")), UrlLauncher)
