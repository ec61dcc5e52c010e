"""A harness acting inside a Harbor task's environment: its shell runs there, its workspace is the workdir.

The harness runs as any agent does, confined, its model only through the run's gateway. Two things join it
to the task's container:

* the container is started again with the agent's workspace folder (``/app`` in its sandbox, holding a
  copy of the image's workdir) bind-mounted at the workdir, so the harness's file tools and the
  container's programs see the same files;
* its ``bash`` is a small client (run_services/harbor_shell_client.py, run by the host's Python, seen
  read-only over ``/usr/bin/bash`` in its sandbox; the real bash stays at ``/.agentenv-bash``) that sends
  each ``bash … -c COMMAND`` through one more door of its network to the exec door of this run, which
  runs ``bash`` with the same arguments by ``docker exec`` in the container; a bash on a terminal (a tmux
  pane's) gets a terminal in the container (runtime/harbor/terminal.py). The door takes a per-agent token.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from prefect_agentenv.context import DeployedAgent, PromptResponse
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.protocols.a2a import PromptTimeoutError
from prefect_agentenv.run_services.harbor_mcp import TURN_OVER
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import StepModel

if TYPE_CHECKING:
    from prefect_agentenv.runtime.harbor.terminal import Terminal

SHELL_AWARE = ("pi", "codex", "opencode", "claude-code", "openhands")
"""Harnesses whose shell this runner points into the environment, each as its ``bash`` was seen invoked: pi
and OpenCode ``bash -c``, Codex CLI ``/bin/bash -c`` (its snapshot ``-lc``), Claude Code ``$SHELL -c -l``
and ``bash -c``, OpenHands ``bash -c "nice -n 10 /bin/bash"`` in a tmux pane (one interactive bash)."""
REAL_BASH = "/.agentenv-bash"
SANDBOX_WORKSPACE = "/app"
"""The harness's working folder in its sandbox; the environment's workdir is mounted from it."""
MAX_TERMINALS = 16
"""Terminals one agent may hold open at once (OpenHands holds one or two)."""
CLIENT = Path(__file__).with_name("harbor_shell_client.py")

_DISCONNECT_POLL = 0.5


@dataclass
class ExecTarget:
    """Where the exec endpoint runs commands; the container changes when the environment is started again."""

    container: str
    workdir: str
    user: str | None


@dataclass(frozen=True)
class ShellCall:
    """One ``bash`` invocation of the harness: its arguments (``-c COMMAND`` among them) and where it ran."""

    args: tuple[str, ...]
    cwd: str
    """The harness's working folder, already mapped into the environment (:func:`environment_cwd`)."""


@dataclass(frozen=True)
class ShellResult:
    exit_code: int
    stdout: str
    stderr: str


def environment_cwd(cwd: str, workdir: str) -> str:
    """The harness's folder in the environment: ``/app/sub`` → ``<workdir>/sub``; elsewhere, the workdir."""
    if cwd != SANDBOX_WORKSPACE and not cwd.startswith(SANDBOX_WORKSPACE + "/"):
        return workdir
    below = cwd[len(SANDBOX_WORKSPACE):]
    return (workdir.rstrip("/") + below) or "/"


Run = Callable[[ExecTarget, ShellCall], Awaitable[ShellResult]]
OpenTerminal = Callable[[ExecTarget, ShellCall, int, int], Awaitable["Terminal"]]


class ExecDoor:
    """The exec door's app and the terminals it holds open; :meth:`close` ends them all (at teardown).

    ``POST /exec {args, cwd}`` → ``{exit_code, stdout, stderr}``; ``POST /exec/session {args, cwd, rows,
    cols}`` → ``{id}``, then ``/exec/session/<id>/input`` (bytes typed), ``/output`` (bytes written, streamed
    until the terminal closes), ``/exit`` (``{exit_code}``) and ``/close``. Every request carries the agent's
    bearer token. Outside the agent's turn (``turn`` clear) a command, a terminal or a keystroke is refused
    (409): what the agent left running on its own side cannot act in the environment while it is graded.
    """

    def __init__(self, target: ExecTarget, token: str, run: Run, open_terminal: OpenTerminal | None = None,
                 turn: asyncio.Event | None = None) -> None:
        self.target, self.token, self._run, self._open = target, token, run, open_terminal
        self.turn = turn
        """Set while the agent's turn is on; clear, nothing new runs or is typed (None: always on)."""
        self.terminals: dict[str, Terminal] = {}
        session = "/exec/session/{session}"
        self.app = Starlette(routes=[
            Route("/exec", self._exec, methods=["POST"]),
            Route("/exec/session", self._open_session, methods=["POST"]),
            Route(f"{session}/input", self._input, methods=["POST"]),
            Route(f"{session}/output", self._output, methods=["GET"]),
            Route(f"{session}/exit", self._exit, methods=["GET"]),
            Route(f"{session}/close", self._close, methods=["POST"]),
        ])

    async def close(self) -> None:
        """Every terminal still open ended (their ``docker exec`` with them)."""
        while self.terminals:
            await self.terminals.popitem()[1].close()

    def _allowed(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    def _refused(self, request: Request) -> Response | None:
        """Why a request that would run or type something is refused: a wrong token, or the agent's turn over
        (what a process it left on its own side sends while the verifier runs)."""
        if not self._allowed(request):
            return _forbidden()
        if self.turn is not None and not self.turn.is_set():
            return Response(TURN_OVER + "\n", status_code=409)
        return None

    async def _exec(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        parsed = await _exec_body(request, self.target.workdir)
        if parsed is None:
            return _malformed()
        running = asyncio.ensure_future(self._run(self.target, parsed[0]))
        while not (await asyncio.wait({running}, timeout=_DISCONNECT_POLL))[0]:
            if await request.is_disconnected():  # the harness stopped its command: so does the environment
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
                return Response(status_code=499)
        done = running.result()
        return JSONResponse({"exit_code": done.exit_code, "stdout": done.stdout, "stderr": done.stderr})

    async def _open_session(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        parsed = await _exec_body(request, self.target.workdir)
        if parsed is None:
            return _malformed()
        if self._open is None or len(self.terminals) >= MAX_TERMINALS:
            return Response(f"no more terminals (at most {MAX_TERMINALS} at once)\n", status_code=429)
        session = secrets.token_urlsafe(12)
        call, (rows, cols) = parsed
        self.terminals[session] = await self._open(self.target, call, rows, cols)
        return JSONResponse({"id": session})

    def _terminal(self, request: Request) -> Terminal | Response:
        if not self._allowed(request):
            return _forbidden()
        found = self.terminals.get(request.path_params["session"])
        return found if found is not None else Response("no such terminal\n", status_code=404)

    async def _input(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        terminal = self._terminal(request)
        if isinstance(terminal, Response):
            return terminal
        await terminal.write(await request.body())
        return Response(status_code=204)

    async def _output(self, request: Request) -> Response:
        terminal = self._terminal(request)
        if isinstance(terminal, Response):
            return terminal
        return StreamingResponse(terminal.chunks(), media_type="application/octet-stream")

    async def _exit(self, request: Request) -> Response:
        terminal = self._terminal(request)
        if isinstance(terminal, Response):
            return terminal
        code = await terminal.wait()
        self.terminals.pop(request.path_params["session"], None)
        await terminal.close()
        return JSONResponse({"exit_code": code})

    async def _close(self, request: Request) -> Response:
        terminal = self._terminal(request)
        if isinstance(terminal, Response):
            return terminal
        self.terminals.pop(request.path_params["session"], None)
        await terminal.close()
        return Response(status_code=204)


def _forbidden() -> Response:
    return Response("forbidden\n", status_code=403)


def _malformed() -> Response:
    return Response('expected {"args": [strings], "cwd": string} (and "rows", "cols" for a terminal)\n',
                    status_code=400)


class _ExecBody(BaseModel):
    """The body of ``POST /exec`` (``rows`` and ``cols`` are read only by ``/exec/session``)."""

    model_config = ConfigDict(strict=True)

    args: list[str]
    cwd: str = SANDBOX_WORKSPACE
    rows: int = Field(default=24, gt=0, lt=10000)
    cols: int = Field(default=80, gt=0, lt=10000)


async def _exec_body(request: Request, workdir: str) -> tuple[ShellCall, tuple[int, int]] | None:
    """The request's ``bash`` invocation, its folder mapped into the environment, and its terminal's size;
    None when the body is not ``{args: [str], cwd: str, rows?: int, cols?: int}``."""
    try:
        body = _ExecBody.model_validate_json(await request.body())
    except ValidationError:
        return None
    return ShellCall(tuple(body.args), environment_cwd(body.cwd, workdir)), (body.rows, body.cols)


def shell_overlays(folder: Path) -> list[tuple[str, str]]:
    """The client copied to ``folder``; the overlays that make it the sandbox's bash (and keep the real one)."""
    folder.mkdir(parents=True, exist_ok=True)
    shell = folder / "bash-in-environment"
    shutil.copyfile(CLIENT, shell)
    shell.chmod(0o755)
    real = shutil.which("bash") or "/usr/bin/bash"
    return [(str(shell), "/usr/bin/bash"), (str(Path(real).resolve()), REAL_BASH)]


def new_token() -> str:
    token = secrets.token_urlsafe(24)
    current_run().redact.add(token)
    return token


async def prompt(step: StepModel, agent: DeployedAgent, instruction: str, timeout: float) -> PromptResponse:
    """The instruction sent to the agent; its reply, or a timed-out response (the verifier still runs)."""
    from prefect_agentenv.run_services.agents import a2a_client

    client = a2a_client(current_run(), agent)
    try:
        reply = await client.send(instruction, timeout_seconds=timeout)
    except PromptTimeoutError as exc:
        return PromptResponse(prompt_id=step.id, prompt=instruction, is_timeout=True, model=agent.model,
                              error=f"the agent did not finish within [agent].timeout_sec={timeout:g}s "
                                    f"(the verifier still runs): {exc}")
    except Exception as exc:  # a broken agent is the agent's failure, graded as it left the environment
        raise StepError(f"the agent failed: {exc}", step=step) from exc
    error = reply.error.message if reply.error is not None else None
    return PromptResponse(prompt_id=step.id, prompt=instruction, response=reply.text, trajectory=reply.trajectory,
                          tool_call_count=reply.tool_call_count, model=reply.model or agent.model, error=error,
                          is_truncated=reply.is_truncated, is_timeout=reply.is_timeout)
