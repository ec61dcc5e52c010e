"""The AgentEnv framework's own example bundles, run unchanged from the installed package.

The task documents are read from ``agent_env/examples/*/tasks/`` and ``agent_env/agents/tasks/``
inside the peers' venv (``make peers``), never copied into this repository. The envs are the
bundles' own ``server.py`` files, written with the AgentEnv server SDK and registered by command
on the peers' interpreter, as a user registers an env. The artifacts are the bundles' own
``artifacts/<id>/`` folders, published with ``artifact put``. The verify scripts use the mcp 1.x
client, so they run on the peers' interpreter too (``PREFECT_AGENTENV_VERIFY_PYTHON``).

None of the three runnable bundles (hello, echo-mcp, mail-mcp) deploys an agent, so no model is
involved. The six agent smoke tasks name hosted coding agents (claude-code, codex, …) that only
AgentEnv's hosted sandboxes install and that need a hosted model: they all validate, and one runs
unchanged with a per-run override putting our scripted agent (with a one-line plan) in place of
the hosted agent — the document's own deploy (no agent_name), prompt (no agent named) and
criteria-form verifier are what is exercised, not a coding agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.conftest import PEERS_PYTHON, ROOT, cli
from prefect_agentenv.documents import validate_file
from prefect_agentenv.documents.schema import document_schema
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.settings import get_settings

SITE = sorted((ROOT / ".venv-peers" / "lib").glob("python3*/site-packages/agent_env"))
PACKAGE = SITE[0] if SITE else None
EXAMPLES = PACKAGE / "examples" if PACKAGE else None
DOCUMENTS = sorted([*PACKAGE.glob("examples/*/tasks/*.json"), *PACKAGE.glob("agents/tasks/*.json")]) if PACKAGE else []

needs_package = pytest.mark.skipif(PACKAGE is None, reason="the AgentEnv framework is installed by `make peers`")


@needs_package
def test_the_package_ships_nine_example_task_documents() -> None:
    assert len(DOCUMENTS) == 9, DOCUMENTS


@needs_package
@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_example_task_document_of_the_package_validates(document: Path) -> None:
    result = validate_file(document)

    assert result.ok, [p.render() for p in result.problems]
    # What was read differently is said: a notice or a warning, never silence about a dropped field.
    raw_fields = {k for step in json.loads(document.read_text()) for k in step}
    if raw_fields & {"sandbox_type", "ttl_seconds", "cpu", "memory_mb"}:
        assert any(w.severity == "notice" for w in result.warnings)


@pytest.fixture(scope="module")
def example_bundles(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch_module: pytest.MonkeyPatch) -> Iterator[None]:
    """The bundles' envs registered by command and their artifacts published, as a user would."""
    if PACKAGE is None or not PEERS_PYTHON.exists():
        pytest.skip("the AgentEnv framework's examples need the peers' venv: run `make peers`")
    monkeypatch_module.setenv("PREFECT_AGENTENV_HOME", str(tmp_path_factory.mktemp("examples-home")))
    monkeypatch_module.setenv("PREFECT_AGENTENV_VERIFY_PYTHON", str(PEERS_PYTHON))
    get_settings.cache_clear()
    assert EXAMPLES is not None
    for env_id, bundle in (("echo", "echo-mcp"), ("mail", "mail-mcp")):
        server = EXAMPLES / bundle / "envs" / env_id / "server.py"
        code, out = cli("env", "register", env_id, "--command", f"{PEERS_PYTHON} {server}", "--env", "MCP_HOST={host}",
                        "--env", "MCP_PORT={port}", "--startup-timeout", "60", "--overwrite")
        assert code == 0, out
    for bundle, artifact in (("hello", "greeting"), ("echo-mcp", "check_echo"), ("mail-mcp", "check_mail")):
        code, out = cli("artifact", "put", artifact, str(EXAMPLES / bundle / "artifacts" / artifact))
        assert code == 0, out
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.parametrize("bundle", ["hello", "echo-mcp", "mail-mcp"])
async def test_a_runnable_example_bundle_passes_unchanged(example_bundles: None, bundle: str) -> None:
    assert EXAMPLES is not None
    [document] = (EXAMPLES / bundle / "tasks").glob("*.json")
    task = validate_file(document).raise_for_problems(str(document))

    report = await run_task_document(task, execute_in_prefect=False, publish=False)

    assert report.outcome == "PASSED", (report.error, report.steps, report.context.metadata.verifications)
    assert report.score == 1.0
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    for env in report.context.deployed_envs.values():
        with pytest.raises(httpx.ConnectError):
            httpx.get(env.base_url, timeout=2.0)
    for sandbox in report.context.deployed_sandboxes.values():
        assert not Path(sandbox.sandbox).exists(), "the bare sandbox was removed at teardown"


async def test_an_agent_smoke_task_runs_unchanged_with_the_scripted_agent_in_place_of_the_hosted_one(
        example_bundles: None) -> None:
    assert PACKAGE is not None
    document = PACKAGE / "agents" / "tasks" / "claude-code-smoke.json"
    task = validate_file(document).raise_for_problems(str(document))
    # Stand-in, said plainly: the scripted agent answers from its plan; it runs no shell command.
    overrides = {"a2a_agent_id": "scripted", "agent_config": json.dumps({"plan": {"reply": "42"}})}

    report = await run_task_document(task, overrides=overrides, execute_in_prefect=False, publish=False)

    assert report.outcome == "PASSED", (report.error, report.steps)
    assert report.context.deployed_agents["default-agent"].a2a_agent_id == "scripted"
    assert report.context.prompt_responses["ask"].response == "42"


@needs_package
@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_example_task_document_is_valid_against_the_json_schema(document: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")

    jsonschema.validate({"id": document.stem, "steps": json.loads(document.read_text())}, document_schema())
