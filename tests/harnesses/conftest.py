"""The coding-agent harnesses, installed by ``make harnesses`` (``agent install``) into the checkout's
``.agentenv/harnesses`` once, and AgentEnv's own smoke tasks, read from the installed framework package.

A test that needs a harness installs it the way a user does (``install_harnesses``, which leaves
one already there alone); when the registry cannot provide it the test fails with the installer's
message — the package and the registry's answer — never skips in silence.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from image_mode import require_image_mode
from prefect_agentenv.agents.harnesses.installed import HarnessManifest
from prefect_agentenv.agents.harnesses.installer import install_harnesses
from prefect_agentenv.documents import validate_file
from prefect_agentenv.flows.agent_task import run_task_document
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
HARNESS_DIR = Path(os.environ.get("PREFECT_AGENTENV_HARNESS_DIR") or ROOT / ".agentenv" / "harnesses")
SITE = sorted((ROOT / ".venv-peers" / "lib").glob("python3*/site-packages/agent_env"))
SMOKE_TASKS = SITE[0] / "agents" / "tasks" if SITE else None


@pytest.fixture(scope="module")
def daemon() -> None:
    """The local docker daemon and its test image (Harbor tasks run there); skipped with the reason without them."""
    require_image_mode()


@pytest.fixture
def harness_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A run home of the test's own, with the checkout's harness folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("PREFECT_AGENTENV_HOME", str(home))
    monkeypatch.setenv("PREFECT_AGENTENV_HARNESS_DIR", str(HARNESS_DIR))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("PREFECT_AGENTENV_OPENAI_BASE_URL", raising=False)
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


async def ensure_installed(name: str) -> HarnessManifest:
    """The harness, installed if it is not yet; a failure is the test's, with the installer's reason."""
    [outcome] = await install_harnesses([name], root=HARNESS_DIR)
    if outcome.manifest is None:
        pytest.fail(f"the {name} harness could not be installed here: {outcome.error}")
    return outcome.manifest


def smoke_task(name: str) -> Path:
    if SMOKE_TASKS is None:
        pytest.fail("AgentEnv's smoke tasks come with the framework package in .venv-peers: run `make peers`")
    return SMOKE_TASKS / f"{name}-smoke.json"


async def run_document(path: Path, **kwargs: object) -> tuple[TaskReport, str]:
    """Run a task document as `prefect-agentenv run` does (no Prefect API): its report and run id."""
    task = validate_file(path).raise_for_problems(str(path))
    run_id = uuid.uuid4().hex
    report = await run_task_document(task, run_id=run_id, execute_in_prefect=False, publish=False, **kwargs)  # type: ignore[arg-type]
    return report, run_id


def marked_processes(run_id: str) -> list[str]:
    """Live processes whose environment carries the run's marker, as ``pid command`` lines."""
    needle = f"{RUN_MARKER}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] != "Z" and needle in (entry / "environ").read_bytes().split(b"\0"):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name} {command[:200]}")
        except OSError:
            continue
    return found


def assert_smoke_passed(report: TaskReport, run_id: str, harness: str, model: str = "mock") -> None:
    """The smoke task's own check passed on the harness's own work, and the run left nothing behind."""
    prompt = report.context.prompt_responses["ask"]
    assert report.outcome == "PASSED", (report.error, prompt, report.steps)
    assert prompt.response.strip() == "42"
    assert prompt.tool_call_count and prompt.tool_call_count >= 1, "the harness ran the command with its shell tool"
    assert prompt.model == model, "the model that answered is the one the report names"
    assert prompt.usage is not None and (prompt.usage.input_tokens or 0) > 0, "the tokens the model reported"
    assert report.transcript is not None and report.transcript.prompts[0].tokens is not None
    calls = report.model_calls
    assert calls is not None and calls.by_role["agent"].calls >= 1, "every model call went through the run's gateway"
    assert calls.by_role["agent"].input_tokens > 0 and calls.totals.failed == 0
    agent = report.context.deployed_agents["default-agent"]
    assert agent.a2a_agent_id == harness
    assert agent.confinement is not None and agent.confinement.confined, "a harness runs confined by default"
    assert report.teardown and all(entry.ok for entry in report.teardown), report.teardown
    assert not Path(agent.sandbox).exists(), "the sandbox (its HOME and workspace) went at teardown"
    assert marked_processes(run_id) == [], "every process of the run (the wrapper, its CLIs) was stopped"


def trajectory_events(report: TaskReport, prompt_id: str = "ask") -> object:
    """The stored trajectory of a prompt (the harness's own events)."""
    location = report.context.prompt_responses[prompt_id].trajectory
    assert location and location.startswith("file://"), location
    return json.loads(Path(location.removeprefix("file://")).read_text())
