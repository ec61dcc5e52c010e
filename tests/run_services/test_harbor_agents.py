"""The shell client laid over a harness's bash on a Harbor task, and the exec door it talks to, over loopback:
every ``-c`` form the harnesses use is carried with its arguments as they were, the environment's stdout,
stderr and exit code come back apart and unchanged, anything else is left to the real bash, and the door
answers only the agent's token."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from prefect_agentenv.run_services.harbor_agents import (
    REAL_BASH,
    ExecDoor,
    ExecTarget,
    ShellCall,
    ShellResult,
    environment_cwd,
    shell_overlays,
)
from prefect_agentenv.runtime.harbor.terminal import Terminal
from prefect_agentenv.runtime.launch.guest_server import GuestServer, start_guest_server

TOKEN = "the-agents-token"


class Door:
    """A real exec door on loopback whose environment is a recorder: every call, and one fixed answer."""

    def __init__(self) -> None:
        self.calls: list[ShellCall] = []
        self.answer = ShellResult(7, "out \u00e9\n", "err\n")
        self.server: GuestServer | None = None

    async def run(self, target: ExecTarget, call: ShellCall) -> ShellResult:
        self.calls.append(call)
        return self.answer


@pytest.fixture
async def door() -> AsyncIterator[Door]:
    opened = Door()
    app = ExecDoor(ExecTarget("container", "/srv/work", None), TOKEN, opened.run).app
    opened.server = await start_guest_server(app, "127.0.0.1", graceful_shutdown_seconds=1, name="test exec door")
    yield opened
    await opened.server.stop()


def client(tmp_path: Path) -> Path:
    [(source, inside), (real, kept)] = shell_overlays(tmp_path / "overlay")
    assert (inside, kept) == ("/usr/bin/bash", REAL_BASH) and Path(real).name == "bash"
    return Path(source)


async def run_client(shell: Path, door: Door, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    assert door.server is not None
    env = {"PATH": os.environ["PATH"], "AGENTENV_HARBOR_EXEC": f"{door.server.base_url}/exec",
           "AGENTENV_HARBOR_TOKEN": TOKEN}
    process = await asyncio.create_subprocess_exec(sys.executable, str(shell), *args, cwd=cwd, env=env,
                                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await process.communicate()
    return subprocess.CompletedProcess([str(shell), *args], process.returncode or 0, out, err)


@pytest.mark.parametrize("args", [
    ["-c", "pwd"],                                  # pi, OpenCode, Codex's command
    ["-lc", "pwd"],                                 # Codex's login form
    ["-c", "-l", "pwd"],                            # Claude Code
    ["-l", "-c", "pwd"],
    ["--login", "-c", "pwd"],
    ["-o", "pipefail", "-ec", "pwd", "name", "arg 1"],  # options with a value, then $0 and $1
])
async def test_every_dash_c_form_reaches_the_environment_as_it_was(door: Door, tmp_path: Path,
                                                                   args: list[str]) -> None:
    done = await run_client(client(tmp_path), door, *args, cwd=tmp_path)

    assert door.calls == [ShellCall(tuple(args), "/srv/work")], "a folder outside /app is the workdir"
    assert (done.returncode, done.stdout, done.stderr) == (7, "out \u00e9\n".encode(), b"err\n"), \
        "the environment's exit code, stdout and stderr, each as it was"


@pytest.mark.parametrize("args", [["script.sh"], ["-i"], [], ["--", "-c"], ["-x", "script.sh", "-c"]])
async def test_a_script_or_a_shell_reading_its_input_off_a_terminal_is_left_to_the_real_bash(
        door: Door, tmp_path: Path, args: list[str]) -> None:
    done = await run_client(client(tmp_path), door, *args, cwd=tmp_path)

    assert door.calls == [], "nothing but a -c command goes to the environment when there is no terminal"
    assert b"os.execv(REAL_BASH" in done.stderr, "it turned to the real bash (absent outside a sandbox)"


def test_which_invocations_run_a_command_and_which_read_their_input() -> None:
    from prefect_agentenv.run_services.harbor_shell_client import interactive, runs_a_command

    commands = [["-c", "x"], ["-lc", "x"], ["-c", "-l", "x"], ["--login", "-c", "x"], ["-o", "pipefail", "-c", "x"],
                ["--rcfile", "-c", "-c", "x"], ["+H", "-ec", "x"]]
    assert all(runs_a_command(args) for args in commands)
    assert not any(runs_a_command(args) for args in [[], ["s.sh", "-c"], ["-o", "c"], ["--", "-c"], ["-i"], ["-"]])
    assert all(interactive(args) for args in [[], ["-i"], ["-l"], ["--login", "-i"]])
    assert not any(interactive(args) for args in [["-c", "x"], ["s.sh"], ["-"], ["--"]])


async def test_without_an_answer_from_the_environment_the_command_fails_126_saying_so(door: Door,
                                                                                     tmp_path: Path) -> None:
    assert door.server is not None
    await door.server.stop()

    done = await run_client(client(tmp_path), door, "-c", "true", cwd=tmp_path)

    assert done.returncode == 126 and b"the task's environment did not answer" in done.stderr


def test_the_sandbox_workspace_is_the_workdir() -> None:
    assert environment_cwd("/app", "/srv/work") == "/srv/work"
    assert environment_cwd("/app/a/b", "/srv/work/") == "/srv/work/a/b"
    assert environment_cwd("/app", "/") == "/" and environment_cwd("/app/x", "/") == "/x"
    assert environment_cwd("/application", "/srv") == "/srv" and environment_cwd("/tmp", "/srv") == "/srv"


async def test_the_exec_door_refuses_a_request_without_the_agents_token() -> None:
    ran: list[ShellCall] = []

    async def record(target: ExecTarget, call: ShellCall) -> ShellResult:
        ran.append(call)
        return ShellResult(3, "out\n", "err\n")

    app = ExecDoor(ExecTarget("c", "/srv/work", None), "the-token", record).app
    allowed_headers = {"Authorization": "Bearer the-token"}
    body = {"args": ["-lc", "id"], "cwd": "/app/sub"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://door") as http:
        refused = await http.post("/exec", json=body)
        wrong = await http.post("/exec", json=body, headers={"Authorization": "Bearer guess"})
        malformed = await http.post("/exec", json={"args": "id"}, headers=allowed_headers)
        not_json = await http.post("/exec", content=b"{", headers=allowed_headers)
        allowed = await http.post("/exec", json=body, headers=allowed_headers)
        no_terminal = await http.get("/exec/session/guess/output", headers={"Authorization": "Bearer guess"})

    assert [r.status_code for r in (refused, wrong, malformed, not_json, allowed)] == [403, 403, 400, 400, 200]
    assert no_terminal.status_code == 403, "a terminal's paths take the token too"
    assert allowed.json() == {"exit_code": 3, "stdout": "out\n", "stderr": "err\n"}
    assert ran == [ShellCall(("-lc", "id"), "/srv/work/sub")], "the sandbox's /app/sub is the workdir's sub"


@pytest.fixture
async def environment() -> AsyncIterator[tuple[ExecDoor, str]]:
    """A real container of the test image, and a real exec door into it on loopback (as a Harbor task's)."""
    from image_mode import TEST_IMAGE, skip_reason
    from prefect_agentenv.runtime.harbor.environment import exec_bash, remove_environment, start_environment
    from prefect_agentenv.runtime.harbor.terminal import open_terminal

    reason = await asyncio.to_thread(skip_reason)
    if reason is not None:
        pytest.skip(reason)
    container = await start_environment(TEST_IMAGE, workdir="/srv", env={}, network="none", run_id=None)

    async def command(where: ExecTarget, call: ShellCall) -> ShellResult:
        done = await exec_bash(where.container, list(call.args), user=None, timeout=60, workdir=call.cwd)
        return ShellResult(done.exit_code, done.stdout, done.stderr)

    async def terminal(where: ExecTarget, call: ShellCall, rows: int, cols: int) -> Terminal:
        return await open_terminal(where.container, list(call.args), user=None, workdir=call.cwd, timeout=60,
                                   rows=rows, cols=cols)

    exec_door = ExecDoor(ExecTarget(container, "/srv", None), TOKEN, command, terminal)
    server = await start_guest_server(exec_door.app, "127.0.0.1", graceful_shutdown_seconds=1, name="test door")
    try:
        yield exec_door, f"{server.base_url}/exec"
    finally:
        await exec_door.close()
        await server.stop()
        await remove_environment(container)


async def test_outside_the_agents_turn_the_door_runs_nothing_types_nothing_and_opens_no_terminal() -> None:
    """What the agent leaves running on its own side (a loop holding its token) sends its commands while the
    verifier runs: the door refuses each, until the agent's next turn opens it again."""
    ran: list[ShellCall] = []

    async def record(target: ExecTarget, call: ShellCall) -> ShellResult:
        ran.append(call)
        return ShellResult(0, "", "")

    async def no_terminal(target: ExecTarget, call: ShellCall, rows: int, cols: int) -> Terminal:
        raise AssertionError("no terminal opens outside the agent's turn")

    turn = asyncio.Event()
    app = ExecDoor(ExecTarget("c", "/srv/work", None), "the-token", record, no_terminal, turn=turn).app
    headers = {"Authorization": "Bearer the-token"}
    body = {"args": ["-c", "echo 1 > /logs/verifier/reward.txt"], "cwd": "/app"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://door") as http:
        command = await http.post("/exec", json=body, headers=headers)
        session = await http.post("/exec/session", json=body, headers=headers)
        typed = await http.post("/exec/session/any/input", content=b"echo 1 > reward.txt\n", headers=headers)
        turn.set()
        in_turn = await http.post("/exec", json=body, headers=headers)

    assert [r.status_code for r in (command, session, typed)] == [409, 409, 409]
    assert "the agent's turn is over" in command.text
    assert in_turn.status_code == 200 and len(ran) == 1, "its next turn opens the door again"


async def started(shell: Path, url: str, *args: str, tty: int | None = None) -> asyncio.subprocess.Process:
    env = {"PATH": os.environ["PATH"], "AGENTENV_HARBOR_EXEC": url, "AGENTENV_HARBOR_TOKEN": TOKEN}
    if tty is not None:
        return await asyncio.create_subprocess_exec(sys.executable, str(shell), *args, env=env, cwd="/", stdin=tty,
                                                    stdout=tty, stderr=tty)
    return await asyncio.create_subprocess_exec(sys.executable, str(shell), *args, env=env, cwd="/",
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


async def processes_in(container: str, *words: str) -> str:
    """The container's command lines, once all of ``words`` show in them (or after 10 s)."""
    from prefect_agentenv.runtime.harbor.environment import exec_in

    listing = ""
    for _ in range(50):
        listing = (await exec_in(container, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '", user=None, timeout=30)).output
        if all(word in listing for word in words):
            break
        await asyncio.sleep(0.2)
    return listing


async def test_a_command_runs_in_the_container_with_its_output_and_exit_code_as_they_were(
        environment: tuple[ExecDoor, str], tmp_path: Path) -> None:
    _, url = environment
    shell = client(tmp_path)

    done = await started(shell, url, "-lc", 'echo "in $(pwd) as $0 $1"; echo oops >&2; exit 4',
                         "name", "first")
    out, err = await done.communicate()

    assert (done.returncode, out, err) == (4, b"in /srv as name first\n", b"oops\n")


async def test_a_command_the_harness_stops_stops_in_the_container(environment: tuple[ExecDoor, str],
                                                                  tmp_path: Path) -> None:
    exec_door, url = environment
    command = await started(client(tmp_path), url, "-c", "sleep 303")
    assert "sleep 303" in await processes_in(exec_door.target.container, "sleep 303")

    command.kill()  # a harness's own timeout on its shell tool
    await command.wait()

    for _ in range(20):
        if "sleep 303" not in await processes_in(exec_door.target.container):
            break
        await asyncio.sleep(0.5)
    assert "sleep 303" not in await processes_in(exec_door.target.container), "the container's command went too"


async def test_a_bash_on_a_terminal_gets_a_terminal_in_the_environment(environment: tuple[ExecDoor, str],
                                                                       tmp_path: Path) -> None:
    """The client on a pseudo-terminal (as in a tmux pane): what is typed reaches the container's interactive
    bash, its prompt and output come back, its exit code is the client's; a hang-up ends its processes."""
    exec_door, url = environment
    shell = client(tmp_path)
    main, side = pty.openpty()
    try:
        process = await started(shell, url, "-c", "exec bash -i", tty=side)
        os.write(main, b"echo in-$(pwd)-$((6 * 7)); tty\rexit 3\r")
        await asyncio.wait_for(process.wait(), 60)
        seen = b""
        while chunk := _read_ready(main):
            seen += chunk
        assert b"in-/srv-42" in seen, seen[-800:]
        assert b"/dev/pts/" in seen, "the container's bash has a terminal of its own"
        assert process.returncode == 3, (process.returncode, seen[-800:])
        assert exec_door.terminals == {}, "the ended terminal was let go"

        hung = await started(shell, url, "-c", "sleep 301 & sleep 302", tty=side)
        running = await processes_in(exec_door.target.container, "sleep 301", "sleep 302")
        assert "sleep 301" in running and "sleep 302" in running, running
        hung.send_signal(signal.SIGHUP)  # tmux killing the pane
        assert await asyncio.wait_for(hung.wait(), 30) == 128 + signal.SIGHUP
        left = await processes_in(exec_door.target.container)
        assert "sleep 30" not in left and exec_door.terminals == {}, "the pane's processes went with it"
    finally:
        os.close(main)
        os.close(side)


def _read_ready(fd: int) -> bytes:
    readable, _, _ = select.select([fd], [], [], 0.5)
    if not readable:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""
