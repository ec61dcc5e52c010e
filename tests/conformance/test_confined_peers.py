"""Genuine third-party peers registered by their command alone run confined, with no install path: the confined
launcher finds what each command needs (docs/security.md, "Its own code").

* ``dummy-a2a`` (from the registry) as a console script of a venv under ``/tmp`` built on another Python than the
  runner's (``make peers`` keeps its wheels; the venv is built here, offline);
* the AgentEnv SDK's agent and env started as their docs start them, ``sh -c '… exec <venv>/bin/python …'``;
* a command whose interpreter is in a folder never shown whole fails before it starts, naming the chain and the
  ``--install-path`` that fixes it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from conformance.conftest import PEERS, PEERS_PYTHON, ROOT, cli
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.resources.sandbox import create_sandbox

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's")]

DUMMY_A2A = ROOT / ".dummy-a2a"


def _home_of(venv: Path) -> Path:
    """The base Python's folder a venv was built on (``pyvenv.cfg``'s ``home``)."""
    for line in (venv / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip())
    raise AssertionError(f"{venv} names no home")


@pytest.fixture(scope="module")
def dummy_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv under /tmp on the Python ``make peers`` built dummy-a2a's on, with dummy-a2a installed offline."""
    if not (DUMMY_A2A / "wheels").is_dir():
        pytest.skip("dummy-a2a's wheels are missing: run `make peers`")
    python = _home_of(DUMMY_A2A / "venv") / "python3"
    venv = tmp_path_factory.mktemp("dummy-a2a") / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(DUMMY_A2A / "wheels"), "dummy-a2a"], check=True, capture_output=True)
    return venv


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_console_script_of_a_venv_on_another_python_runs_confined_by_its_command_alone(
        dummy_venv: Path, prefect_harness: None) -> None:
    base = Path(os.path.realpath(_home_of(dummy_venv))).parent
    assert base != Path(os.path.realpath(sys.base_prefix)), "built on another Python than the runner's"
    name = unique("dummy")
    code, out = cli("agent", "register", name, "--command", f"{dummy_venv}/bin/dummy-a2a --host {{host}} --port {{port}}")
    assert code == 0, out

    code, out = cli("agent", "check", name, "--startup-timeout", "90")
    assert code == 0, out
    assert "confined by bwrap " in out and "network confined" in out, out
    assert f"    {dummy_venv} (venv of {dummy_venv}/bin/dummy-a2a)" in out, out
    assert f"    {base} (installation of {dummy_venv}/bin/dummy-a2a → #!{dummy_venv}/bin/python" in out, out
    assert "message/send + tasks/get      ok" in out or "ok" in out.splitlines()[-1], out


def test_the_agentenv_sdk_agent_started_through_sh_c_runs_confined_by_its_command_alone(
        prefect_harness: None) -> None:
    if not PEERS_PYTHON.exists():
        pytest.skip("the genuine peers need their own venv: run `make peers`")
    name = unique("sdk-agent")
    line = f"sh -c 'A2A_HOST={{host}} A2A_PORT={{port}} exec {PEERS_PYTHON} {PEERS / 'sdk_agent.py'}'"
    code, out = cli("agent", "register", name, "--command", line)
    assert code == 0, out

    code, out = cli("agent", "check", name, "--startup-timeout", "90")
    assert code == 0, out
    assert "confined by bwrap " in out, out
    venv = Path(os.path.realpath(PEERS_PYTHON.parent.parent))  # .venv-peers may be a link to a shared one
    assert f"    {venv} (venv of {PEERS_PYTHON})" in out, out
    assert f"    {PEERS} (named on its command line ({PEERS / 'sdk_agent.py'}))" in out, out


async def test_the_agentenv_sdk_env_started_through_sh_c_runs_confined_by_its_command_alone(tmp_path: Path) -> None:
    if not PEERS_PYTHON.exists():
        pytest.skip("the genuine peers need their own venv: run `make peers`")
    line = f"MCP_HOST={{host}} MCP_PORT={{port}} exec {PEERS_PYTHON} {PEERS / 'sdk_env.py'}"
    spec = LaunchSpec(command=["sh", "-c", line], kind="confined", startup_timeout_seconds=90)
    sandbox = create_sandbox(tmp_path / "run", "notes")
    launcher = ConfinedLauncher(run_id=uuid.uuid4().hex)
    instance = await launcher.start(spec, name="notes", workdir=tmp_path / "run", cwd=sandbox.root)
    try:
        assert instance.confinement is not None and instance.confinement.mechanism.startswith("bwrap ")
        assert any(m.startswith(f"{PEERS} ") for m in instance.confinement.mounts), instance.confinement.mounts
        async with httpx.AsyncClient() as client:
            card = (await client.get(f"{instance.base_url}/.well-known/agent-env.json")).json()
        assert card["name"] == "notes"
    finally:
        await launcher.stop(instance)


def test_an_interpreter_in_a_folder_never_shown_whole_fails_before_start_naming_it_and_the_fix(
        tmp_path: Path, prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    shutil.copy(os.path.realpath(sys.executable), home / "bin" / "python3")
    monkeypatch.setenv("HOME", str(home))  # a Python installed with its prefix at the user's home
    agent = tmp_path / "tools" / "my-agent"
    agent.parent.mkdir()
    agent.write_text(f"#!{home}/bin/python3\nprint('never runs')\n")
    agent.chmod(0o755)
    name = unique("unseen")
    assert cli("agent", "register", name, "--command", f"{agent} --port {{port}}")[0] == 0

    code, out = cli("agent", "check", name)
    assert code == 1, out
    line = next(line for line in out.splitlines() if "cannot run confined" in line)
    assert (f"{agent} → #!{home}/bin/python3 → {home} is an installation in a folder never shown whole; add "
            f"--install-path {home} (install_paths on its block)") in line, line


def test_the_bring_your_own_pages_example_runs_as_written(prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/bring-your-own.md: from examples/agents, ``python plain_agent.py`` (a pyenv shim, a relative script)
    registers, and the agent checks out confined."""
    page = (ROOT / "docs" / "bring-your-own.md").read_text()
    command = 'python plain_agent.py --host {host} --port {port}'
    assert f'agent register plain --command "{command}"' in page
    monkeypatch.chdir(ROOT / "examples" / "agents")
    name = unique("plain")
    code, out = cli("agent", "register", name, "--command", command)
    assert code == 0, out
    assert f"resolved plain_agent.py → {ROOT / 'examples' / 'agents' / 'plain_agent.py'}" in out, out

    code, out = cli("agent", "check", name)
    assert code == 0, out
    assert "reply 'plain agent heard: " in out and "confined by bwrap " in out, out
    assert f"    {ROOT / 'examples' / 'agents' / 'plain_agent.py'} (named on its command line" in out, out
