"""The grading box: a fresh confined copy of a sandbox that grading code runs in. Real bubblewrap, real
processes; the agent's side is played by files planted in its sandbox."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from prefect_agentenv.runtime.confinement.grading_box import open_box
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox, runs_code

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's")

CANARY = "AGENTENV_TEST_GRADER_CANARY"


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = create_sandbox(tmp_path / "run", "coder")
    (box.root / "app" / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    (box.home / ".bashrc").write_text("echo the agent's shell config\n")
    return box


async def _sh(box_path: Path, sandbox: Sandbox, line: str, **kwargs: object) -> tuple[int, str]:
    box = open_box(sandbox, box_path, **kwargs)  # type: ignore[arg-type]
    try:
        done = await box.run(["bash", "-c", line], cwd="/app", env={"GRADER_SETTING": "1"}, run_id="grading-test",
                             timeout=30, max_output_bytes=64 * 1024, merge_stderr=True)
    finally:
        box.remove()
    return done.returncode, done.stdout.decode(errors="replace").strip()


async def test_commands_run_confined_on_a_copy_of_the_sandbox_without_the_agents_home(
        sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CANARY, "secret")
    secret = tmp_path / "criteria.txt"
    secret.write_text("the answers")
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    line = "; ".join([
        "echo pwd=$(pwd)",
        "echo solution=$(grep -c 'a + b' /app/solution.py)",
        "echo home=$(ls -A $HOME | wc -l)",
        f"echo canary=$(printenv {CANARY} || echo absent)",
        "echo setting=$GRADER_SETTING",
        f"echo criteria=$(cat {secret} 2>/dev/null || echo refused)",
        f"echo network=$(python -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' 2>/dev/null"
        " && echo open || echo refused)",
        "echo mine > /app/solution.py && echo wrote=copy",
    ])
    try:
        code, out = await _sh(tmp_path / "grading", sandbox, line)
    finally:
        server.close()
        await server.wait_closed()
    seen = dict(item.split("=", 1) for item in out.split())
    assert code == 0, out
    assert seen == {"pwd": "/app", "solution": "1", "home": "0", "canary": "absent", "setting": "1",
                    "criteria": "refused", "network": "refused", "wrote": "copy"}, out
    assert "a + b" in (sandbox.root / "app" / "solution.py").read_text(), "the live sandbox is untouched"
    assert not list((tmp_path / "grading").iterdir()), "the copy is gone"


async def test_files_the_agent_planted_to_change_what_runs_are_set_aside_and_the_tasks_own_put_back(
        sandbox: Sandbox, tmp_path: Path) -> None:
    app = sandbox.root / "app"
    (app / "tests").mkdir()
    (app / "tests" / "conftest.py").write_text("TASK = True\n")
    (app / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    sandbox.note_task_files([app / "tests" / "conftest.py", app / "pyproject.toml"])
    # What the agent does after: plant, change, add a pytest section, shim python.
    (app / "conftest.py").write_text("import pytest\n")
    (app / "sitecustomize.py").write_text("import os\n")
    (app / "evil.pth").write_text("import os\n")
    (app / "tests" / "conftest.py").write_text("TASK = False\n")
    (app / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.pytest.ini_options]\naddopts = '-p evil'\n")
    (app / "bin").mkdir()
    (app / "bin" / "python3").write_text("#!/bin/sh\necho 'all tests passed'\n")
    (app / "bin" / "python3").chmod(0o755)
    os.symlink("/etc/hostname", app / "link")

    box = open_box(sandbox, tmp_path / "grading")
    try:
        assert [s.render() for s in box.set_aside] == [
            "/app/conftest.py (removed)", "/app/evil.pth (removed)", "/app/pyproject.toml (restored)",
            "/app/sitecustomize.py (removed)", "/app/tests/conftest.py (restored)"]
        copy = box.root / "app"
        assert (copy / "tests" / "conftest.py").read_text() == "TASK = True\n"
        assert "tool.pytest" not in (copy / "pyproject.toml").read_text()
        assert not (copy / "conftest.py").exists() and (copy / "solution.py").is_file()
        assert os.readlink(copy / "link") == "/etc/hostname", "a link is copied as a link, never followed"
        done = await box.run(["bash", "-c", "python3 -c 'print(6 * 7)'"], cwd="/app", env={}, run_id="grading-test",
                             timeout=30, max_output_bytes=4096)
        assert (done.returncode, done.stdout.strip()) == (0, b"42"), "the agent's python3 shim is not on the PATH"
        record = box.record().as_json()
        assert record["set_aside"] == [s.render() for s in box.set_aside]
        assert record["network"] == "none" and str(record["mechanism"]).startswith("bwrap ")
    finally:
        box.remove()


async def test_the_path_holds_the_runners_python_and_the_system_never_the_sandboxs_folders(
        sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.root / "app" / "bin").mkdir()
    shim = sandbox.root / "app" / "bin" / "python"
    shim.write_text("#!/bin/sh\necho shim\n")
    shim.chmod(0o755)
    code, out = await _sh(tmp_path / "grading", sandbox, "echo $PATH; python -c 'import sys; print(sys.prefix)'")
    path, prefix = out.splitlines()
    assert code == 0 and "/app" not in path and "/sandbox" not in path, out
    assert prefix == sys.prefix, "python is the runner's own, read-only"


async def test_inputs_narrow_what_is_copied(sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.root / "app" / "notes.txt").write_text("kept out")
    (sandbox.root / "tmp" / "file_artifacts" / "q3.csv").write_text("a,b\n")
    code, out = await _sh(tmp_path / "grading", sandbox, "ls /app /tmp/file_artifacts | tr '\\n' ' '",
                          inputs=["/tmp/file_artifacts"])
    assert code == 0 and "q3.csv" in out and "notes.txt" not in out and "solution.py" not in out, out


def test_what_changes_what_runs(tmp_path: Path) -> None:
    for name, text, expected in [("conftest.py", "", True), ("x.pth", "", True), ("tox.ini", "", True),
                                 ("pyproject.toml", "[project]\n", False),
                                 ("pyproject.toml", "[tool.pytest.ini_options]\n", True),
                                 ("setup.cfg", "[tool:pytest]\n", True), ("solution.py", "", False)]:
        path = tmp_path / name
        path.write_text(text)
        assert runs_code(path) is expected, name


async def test_a_command_that_runs_too_long_is_stopped_with_everything_it_started(
        sandbox: Sandbox, tmp_path: Path) -> None:
    box = open_box(sandbox, tmp_path / "grading")
    try:
        done = await box.run(["bash", "-c", "sleep 300 & sleep 300"], cwd="/app", env={}, run_id="grading-stop",
                             timeout=1, max_output_bytes=1024)
    finally:
        box.remove()
    assert done.timed_out
    await asyncio.sleep(0.5)
    marked = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _marked(p, b"grading-stop")]
    assert marked == []


def _marked(proc: Path, run_id: bytes) -> bool:
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" and b"PREFECT_AGENTENV_RUN_ID=" + run_id in (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def test_a_kept_submission_restores_which_files_the_task_loaded(tmp_path: Path) -> None:
    """Isolated scoring and rescoring restore a sandbox from a record: the task's conftest stays, the agent's goes."""
    from prefect_agentenv.context import DeployedAgent, RunContext
    from prefect_agentenv.engine.scoring_placement import Submission, restored_agent
    from prefect_agentenv.engine.submission_record import StoredSubmission
    from prefect_agentenv.runtime.resources.run import RunResources

    files = {"app/tests/conftest.py": b"TASK = True\n", "app/conftest.py": b"import pytest\n", "app/x.py": b"x = 1\n"}
    captured = Submission(files={"coder": files}, task_files={"coder": {"app/tests/conftest.py": b"TASK = True\n"}})
    record = StoredSubmission.of(captured, task_id="t", run_id="r", context=RunContext(), mode="isolated",
                                 transcript=None, secrets=set())
    run = RunResources(run_id="rescore-1", task_id="t", workdir=tmp_path / "run")
    agent = DeployedAgent.model_validate({"agent_name": "coder", "instance_id": "coder-1", "a2a_url": "http://127.0.0.1:1",
                                          "a2a_agent_id": "scripted", "sandbox": str(tmp_path)})
    kept = StoredSubmission.model_validate_json(record.model_dump_json()).submission()
    restored = restored_agent(run, agent, kept.files["coder"], kept.task_files["coder"])
    box = open_box(run.services.sandboxes[restored.instance_id], tmp_path / "grading")
    try:
        assert [s.render() for s in box.set_aside] == ["/app/conftest.py (removed)"]
        assert (box.root / "app" / "tests" / "conftest.py").read_text() == "TASK = True\n"
    finally:
        box.remove()


FALLBACK = """
import asyncio, json
from pathlib import Path
from prefect_agentenv.runtime.confinement.grading_box import open_box
from prefect_agentenv.runtime.resources.sandbox import create_sandbox

sandbox = create_sandbox(Path("/tmp/run"), "coder")
(sandbox.root / "app" / "solution.py").write_text("x = 1")
(sandbox.root / "app" / "conftest.py").write_text("import pytest")
box = open_box(sandbox, Path("/tmp/grading"))
done = asyncio.run(box.run(["bash", "-c", "ls; echo home=$HOME"], cwd="/app", env={}, run_id="fallback", timeout=30,
                           max_output_bytes=4096))
print(json.dumps({"record": box.record().as_json(), "out": done.stdout.decode(), "live": str(sandbox.root)}))
"""


def test_where_bubblewrap_cannot_run_grading_runs_unconfined_on_the_copy_and_says_why(tmp_path: Path) -> None:
    """A machine without user namespaces for real: a confined process, where bwrap disabled them."""
    import json
    import subprocess

    from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
    from prefect_agentenv.runtime.launch.base import LaunchSpec

    outer = create_sandbox(tmp_path / "outer", "probe")
    spec = LaunchSpec(command=[sys.executable, "-c", FALLBACK], kind="confined", network="public")
    command = ConfinedLauncher(run_id="r1")._command(spec, name="probe", port=1, cwd=outer.root,
                                                      extra_env=outer.env(), instance_id="probe-1")
    done = subprocess.run(command.argv, env=command.env, cwd=command.cwd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    record = seen["record"]
    assert record["mechanism"].startswith("none (bubblewrap cannot create its namespaces here"), record
    assert record["network"] == "host" and record["set_aside"] == ["/app/conftest.py (removed)"]
    assert "solution.py" in seen["out"] and "conftest.py" not in seen["out"], "it ran on the copy"
    assert "home=/tmp/grading/" in seen["out"], "with the copy's own home"
