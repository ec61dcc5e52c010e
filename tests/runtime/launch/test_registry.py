"""The launcher registry: built-in kinds registered like a plugin's, a plugin's kind found through its
entry point and used to deploy a real env, unknown kinds reported cleanly, and kinds inferred for
sources that do not name one (every block saved before ``kind`` existed)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import agentenv_testlaunchers
import httpx
import pytest
from agentenv_testlaunchers import KIND, LEDGER, MARKER, LabelledProcessLauncher
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import BlockDocumentCreate, BlockSchemaCreate
from pydantic import ValidationError

from prefect_agentenv.blocks import A2AAgent, AgentEnvironment
from prefect_agentenv.documents import validate_data
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.runtime.launch import registry as launchers
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.launch.registry import (
    ENTRY_POINT_GROUP,
    DockerLauncher,
    Launchers,
    ProcessLauncher,
    UrlLauncher,
    known_launcher_kinds,
    launcher_factory,
    launcher_for,
    register_launcher,
)

from ..launcher_helpers import fake_command, wait_gone


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A registry of this test's own: what it registers or loads is forgotten afterwards."""
    monkeypatch.setattr(launchers, "_factories", dict(launchers._factories))
    monkeypatch.setattr(launchers, "_advertised", None)
    yield


def ledger_events(folder: Path) -> list[tuple[str, str]]:
    """(event, instance id) of every line the plugin launcher wrote under ``folder``."""
    lines = [json.loads(line) for path in sorted(folder.rglob(LEDGER)) for line in path.read_text().splitlines()]
    return [(line["event"], line["instance_id"]) for line in lines]


def test_the_built_in_kinds_are_registered_like_any_other() -> None:
    assert (launcher_factory("process"), launcher_factory("docker"), launcher_factory("url")) == (
        ProcessLauncher, DockerLauncher, UrlLauncher)
    assert {"process", "docker", "url", KIND} <= set(known_launcher_kinds())


def test_the_plugin_launcher_is_found_through_its_entry_point(registry: None) -> None:
    (entry,) = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == KIND]

    assert entry.dist is not None and entry.dist.name == "agentenv-teststeps"
    assert KIND not in launchers._factories  # read only once a spec asks for it
    launcher = Launchers("run-1").for_spec(LaunchSpec(command=["srv", "{port}"], kind=KIND))
    assert isinstance(launcher, LabelledProcessLauncher) and launcher.run_id == "run-1"
    assert launcher_factory(KIND) is LabelledProcessLauncher


async def test_a_reference_env_deployed_through_the_plugin_launcher_is_started_and_stopped_by_it(
        workdir: Path) -> None:
    block = AgentEnvironment(command=REFERENCE_ENVS["email"].command(), kind=KIND)
    spec = block.to_launch_spec()
    run = Launchers("run-plugin")
    launcher = run.for_spec(spec)
    assert isinstance(launcher, LabelledProcessLauncher)
    instance = await launcher.start(spec, name="email", workdir=workdir)
    try:
        assert instance.kind == KIND and instance.pid is not None
        assert instance.base_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(trust_env=False) as client:
            card = await client.get(instance.base_url + "/.well-known/agent-env.json")
        assert card.status_code == 200
        environ = Path(f"/proc/{instance.pid}/environ").read_bytes().split(b"\0")
        assert f"{MARKER}={KIND}".encode() in environ
    finally:
        await launcher.stop(instance)
        await run.cleanup(interrupted=False)
    assert wait_gone(instance.pid)
    assert ledger_events(workdir) == [("start", instance.instance_id), ("stop", instance.instance_id)]


async def test_a_task_run_deploys_a_block_of_the_plugin_kind_and_tears_it_down(prefect_harness: None,
                                                                              agentenv_home: Path) -> None:
    env_id = f"plugin-{uuid.uuid4().hex[:6]}"
    await AgentEnvironment(command=REFERENCE_ENVS["email"].command(), kind=KIND).asave(env_id)
    report = await _run_deploy_env(env_id)

    assert report.status == "completed", report.error
    (torn,) = [t for t in report.teardown if t.kind == "env"]
    assert torn.ok
    events = ledger_events(agentenv_home)
    assert [event for event, _ in events] == ["start", "stop"]
    assert events[0][1] == report.context.deployed_envs[env_id].instance_id
    pids = [json.loads(line)["pid"] for path in agentenv_home.rglob(LEDGER) for line in path.read_text().splitlines()]
    assert wait_gone(pids[0])


async def test_a_block_of_an_unknown_kind_fails_its_deploy_step_with_the_known_kinds(
        prefect_harness: None, agentenv_home: Path) -> None:
    env_id = f"bwrap-{uuid.uuid4().hex[:6]}"
    await AgentEnvironment(command=REFERENCE_ENVS["email"].command(), kind="bubblewrap").asave(env_id)
    report = await _run_deploy_env(env_id)

    assert report.status == "failed"
    (step,) = report.steps
    assert step.error_type == "ConfigurationError"
    assert step.error is not None and "unknown launcher kind 'bubblewrap'" in step.error
    assert "Traceback" not in step.error and not [t for t in report.teardown if t.kind == "env"]


async def _run_deploy_env(env_id: str) -> TaskReport:
    checked = validate_data([{"id": "env", "type": "deploy_env", "env_id": env_id, "depends_on": []}],
                            default_id="launcher")
    assert checked.ok and checked.document is not None
    return await run_task_document(checked.document, execute_in_prefect=False, publish=False)


def test_an_unknown_kind_names_itself_and_the_known_kinds(registry: None) -> None:
    with pytest.raises(ConfigurationError) as caught:
        launcher_for(LaunchSpec(command=["srv", "{port}"], kind="bubblewrap"))
    message = str(caught.value)
    assert message.startswith("unknown launcher kind 'bubblewrap'; known kinds: ")
    assert all(f" {kind}" in message for kind in ("docker", "process", "url", KIND))
    assert f"entry point in the '{ENTRY_POINT_GROUP}' group" in message

    with pytest.raises(ConfigurationError, match="did you mean 'docker'"):
        launcher_for(LaunchSpec(image="img", kind="dokcer"))


def test_a_built_in_kind_that_does_not_fit_the_source_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="kind 'docker' does not fit the source given, which the 'process'"):
        LaunchSpec(command=["srv", "{port}"], kind="docker")
    with pytest.raises(ValidationError, match="kind 'process' does not fit"):
        AgentEnvironment(url="https://env.example.com", kind="process")
    with pytest.raises(ValidationError):
        LaunchSpec(command=["srv"], kind="")


def test_a_kind_is_registered_once_unless_replaced(registry: None) -> None:
    register_launcher("local", ProcessLauncher)
    register_launcher("local", ProcessLauncher)  # the same factory again is harmless
    with pytest.raises(ConfigurationError, match="launcher kind 'local' is already registered"):
        register_launcher("local", UrlLauncher)
    register_launcher("local", UrlLauncher, replace=True)
    assert launcher_factory("local") is UrlLauncher


def test_a_factory_whose_launcher_claims_another_kind_is_refused(registry: None) -> None:
    register_launcher("mislabelled", ProcessLauncher)
    with pytest.raises(ConfigurationError, match="registered as kind 'mislabelled' .* says its kind is 'process'"):
        launcher_for(LaunchSpec(command=["srv"], kind="mislabelled"))


def test_a_plugin_entry_point_that_cannot_load_is_a_configuration_error(registry: None) -> None:
    broken = importlib.metadata.EntryPoint(name="broken", value="agentenv_no_such_module:Launcher",
                                           group=ENTRY_POINT_GROUP)
    launchers._advertised = {"broken": broken}
    with pytest.raises(ConfigurationError, match=r"launcher kind 'broken' \(agentenv_no_such_module:Launcher\) could"):
        launcher_factory("broken")


@pytest.mark.parametrize(("source", "kind"), [({"command": ["srv", "{port}"]}, "process"),
                                              ({"image": "envs/email:1", "command": ["serve"]}, "docker"),
                                              ({"url": "https://env.example.com"}, "url")])
def test_a_block_saved_before_kind_existed_gets_the_kind_its_source_implies(source: dict[str, object],
                                                                           kind: str) -> None:
    for block in (AgentEnvironment, A2AAgent):
        loaded = block.model_validate({**source, "version": "1.0.0"})
        assert loaded.kind is None and loaded.to_launch_spec().kind == kind
        assert isinstance(launcher_for(loaded.to_launch_spec()), type(launcher_for(LaunchSpec.model_validate(source))))
    assert LaunchSpec.model_validate({**source, "kind": kind}) == LaunchSpec.model_validate(source)


async def test_a_block_stored_under_the_schema_without_kind_loads_and_launches_as_before(
        prefect_harness: None) -> None:
    await AgentEnvironment.aregister_type_and_schema()
    name = f"before-kind-{uuid.uuid4().hex[:6]}"
    old_fields = AgentEnvironment.model_json_schema()
    del old_fields["properties"]["kind"]
    async with get_client() as client:
        block_type = await client.read_block_type_by_slug("agentenv-environment")
        schema = await client.create_block_schema(BlockSchemaCreate(
            fields=old_fields, block_type_id=block_type.id, capabilities=[], version="before-kind"))
        await client.create_block_document(BlockDocumentCreate(
            name=name, block_schema_id=schema.id, block_type_id=block_type.id,
            data={"command": ["srv", "{port}"], "version": "0.9.0"}))

    loaded = cast(AgentEnvironment, await AgentEnvironment.aload(name))
    spec = loaded.to_launch_spec()
    assert (loaded.kind, spec.kind, spec.describe()) == (None, "process", "command srv {port}")
    assert isinstance(Launchers("run-old").for_spec(spec), ProcessLauncher)


async def test_what_the_plugin_launcher_still_runs_at_the_end_of_an_interrupted_run_is_stopped(
        workdir: Path) -> None:
    spec = LaunchSpec(command=fake_command(), kind=KIND)
    run = Launchers("run-interrupted")
    launcher = run.for_spec(spec)
    first = await launcher.start(spec, name="one", workdir=workdir)
    second = await launcher.start(spec, name="two", workdir=workdir)
    assert first.pid is not None and second.pid is not None

    await run.cleanup(interrupted=True)  # teardown was cut short: nothing was stopped one by one
    assert wait_gone(first.pid) and wait_gone(second.pid)
    assert sorted(ledger_events(workdir)) == sorted([("start", first.instance_id), ("start", second.instance_id),
                                                     ("cleanup", first.instance_id), ("cleanup", second.instance_id)])
    await launcher.stop(first)  # already stopped: a no-op, recorded nowhere
    assert len(ledger_events(workdir)) == 4


def test_the_worked_launcher_in_the_docs_is_the_test_plugins_own_code() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "launchers.md").read_text()
    plugin = Path(agentenv_testlaunchers.__file__)
    quoted = [block for block in re.findall(r"```python\n(.*?)```", doc, re.S) if "LabelledProcessLauncher" in block
              or "self._process" in block]
    assert len(quoted) >= 2
    for block in quoted:
        if "register_launcher" not in block:
            assert block in plugin.read_text(), f"not in the test plugin:\n{block}"
    pyproject = (plugin.parents[1] / "pyproject.toml").read_text()
    for block in re.findall(r"```toml\n(.*?)```", doc, re.S):
        assert all(line in pyproject for line in block.splitlines()), block
