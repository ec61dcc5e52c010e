"""run_code: a script artifact runs in a sandbox or beside an env; its JSON result is in the context."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from steps.helpers import is_gone, run_doc, states

pytestmark = pytest.mark.usefixtures("agentenv_home")

COUNT_LINES = '''
from pathlib import Path

def run(input):
    text = Path("app/data/notes.txt").read_text()
    return {"lines": len(text.splitlines()), "label": input["args"]["label"]}
'''
DOUBLE = '''
import helper

async def main(input):
    return helper.double(input["results"]["count"]["lines"])
'''
ENV_INFO = '''
def run(input):
    return input["env"]
'''


def publish(artifact_id: str, files: dict[str, str], folder: Path) -> None:
    paths = {}
    for name, text in files.items():
        paths[name] = folder / f"{artifact_id}-{name}"
        paths[name].write_text(text)
    with get_artifact_store() as store:
        store.publish_files(artifact_id, paths)


async def test_scripts_run_in_a_sandbox_and_see_its_files_and_earlier_results(tmp_path: Path) -> None:
    publish("count", {"count.py": COUNT_LINES}, tmp_path)
    publish("double", {"main.py": DOUBLE, "helper.py": "def double(n):\n    return 2 * n\n"}, tmp_path)
    publish("notes", {"notes.txt": "one\ntwo\nthree\n"}, tmp_path)

    report = await run_doc([
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {"id": "load", "type": "load_artifact", "sandbox_name": "box", "artifact_id": "notes",
         "destination_path": "/app/data"},
        {"id": "count", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "count",
         "args": {"label": "notes"}},
        {"id": "double", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "double",
         "script_file": "main.py", "entrypoint": "main", "result_id": "doubled"},
    ], task_id="run-code")

    assert set(states(report).values()) == {"completed"}, report.error
    assert report.context.metadata.script_results == {"count": {"lines": 3, "label": "notes"}, "doubled": 6}


async def test_a_script_beside_an_env_gets_its_addresses(tmp_path: Path) -> None:
    publish("env-info", {"run.py": ENV_INFO}, tmp_path)

    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "email"},
        {"id": "info", "type": "run_code", "env_id": "email", "script_artifact_id": "env-info"},
    ], task_id="run-code-env")

    assert states(report) == {"env": "completed", "info": "completed"}, report.error
    info = report.context.metadata.script_results["info"]
    assert info["id"] == "email" and info["mcp_url"] == report.context.deployed_envs["email"].mcp_url


async def test_a_failing_script_fails_the_step_with_its_error_and_a_slow_one_is_stopped(tmp_path: Path) -> None:
    publish("boom", {"run.py": "def run(input):\n    raise ValueError('no data for ' + input['args'])\n"}, tmp_path)
    publish("slow", {"run.py": "import time\n\ndef run(input):\n    time.sleep(60)\n"}, tmp_path)

    report = await run_doc([
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box"},
        {"id": "boom", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "boom", "args": "march",
         "fail_task_on_error": False},
        {"id": "slow", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "slow", "timeout_seconds": 1,
         "depends_on": ["box"]},
    ], task_id="run-code-fails")

    failed = {f.step_id: f.error for f in report.context.metadata.failed_steps}
    assert "ValueError: no data for march" in failed["boom"]
    assert states(report)["slow"] == "failed"
    assert "did not finish within 1s" in (report.error or "")


HANGS_WITH_A_HELPER = '''
import subprocess, sys, time

def run(input):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # " + input["args"]])
    time.sleep(120)
'''


def _helper(token: str) -> tuple[int, str] | None:
    """The host pid and run marker of the helper whose command line carries ``token`` (seen from outside the
    script's sandbox, as the sweep of dead runs sees it)."""
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and token.encode() in (proc / "cmdline").read_bytes():
                environ = dict(item.split(b"=", 1) for item in (proc / "environ").read_bytes().split(b"\0") if b"=" in item)
                return int(proc.name), environ.get(b"PREFECT_AGENTENV_RUN_ID", b"").decode()
        except OSError:
            continue
    return None


async def test_a_script_carries_the_run_marker_and_a_stopped_one_leaves_no_helper_running(
        tmp_path: Path, agentenv_home: Path) -> None:
    publish("hangs", {"run.py": HANGS_WITH_A_HELPER}, tmp_path)
    token = f"helper-{uuid.uuid4().hex}"
    seen: list[tuple[int, str]] = []

    async def watch() -> None:
        while not seen:
            found = _helper(token)
            if found is not None:
                seen.append(found)
            await asyncio.sleep(0.05)

    watcher = asyncio.ensure_future(watch())
    try:
        report = await run_doc([
            {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box"},
            {"id": "hangs", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "hangs",
             "args": token, "timeout_seconds": 3},
        ], task_id="run-code-group")
    finally:
        watcher.cancel()

    assert states(report)["hangs"] == "failed" and "did not finish within 3s" in (report.error or "")
    [(pid, marker)] = seen
    (owner,) = (agentenv_home / "runs").glob("*/owner.json")
    assert marker == owner.parent.name  # the sweep finds what a killed run's script left
    assert _stopped(pid), "the helper the script started was stopped with it"


def _stopped(pid: int, within: float = 10.0) -> bool:
    """Gone, or dead and waiting for init to reap it (a killed orphan is reaped by init, not by us)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if is_gone(pid) or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False
