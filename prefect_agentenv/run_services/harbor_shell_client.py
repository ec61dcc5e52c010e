#!/usr/bin/python3
"""The ``bash`` of a harness on a Harbor task: its shell runs in the task's environment, through the run's exec door.

Laid read-only over ``/usr/bin/bash`` in the harness's sandbox (run_services/harbor_agents.py) and run by the
host's Python with its standard library only (nothing of this package is importable there):

* ``bash [options] -c COMMAND [NAME [ARG...]]`` on no terminal is sent with the same arguments and the
  harness's working folder; the environment's stdout, stderr and exit code are written and exited with as
  they were;
* any ``bash`` on a terminal (``-c`` or none: OpenHands' tmux pane runs ``bash -c "nice -n 10 /bin/bash"``)
  gets a terminal in the environment: this terminal is put in raw mode, what is typed is sent, what the
  environment's bash writes comes back as it comes, and its exit code is this one's;
* anything else (a script file, commands on a pipe) is the real bash, kept at ``/.agentenv-bash``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import urllib.request
from typing import Any

REAL_BASH = "/.agentenv-bash"
NO_ANSWER = 126
"""The exit code when the environment did not answer (bash's own for a command it could not run)."""
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def runs_a_command(args: list[str]) -> bool:
    """Whether bash's options (before its first operand) hold ``-c``: ``-c``, ``-lc``, ``-c -l``, ``-o X -c``."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            skip = True
        elif arg == "--" or arg[:1] not in "-+" or len(arg) < 2:
            return False
        elif arg[0] == "-" and arg[1] != "-" and "c" in arg[1:]:
            return True
    return False


def interactive(args: list[str]) -> bool:
    """A bash with no operand (nothing but options, none of them ``-c``): it reads commands from its input."""
    return all(arg[:1] in "-+" and arg not in ("-", "--") for arg in args) and not runs_a_command(args)


def door(path: str, body: bytes | None = None, *, timeout: float = 86400) -> Any:
    """The door's answer to a request on ``path`` (below its ``/exec``): a response to read, or raised."""
    headers = {"Authorization": "Bearer " + os.environ["AGENTENV_HARBOR_TOKEN"]}
    if body is not None:
        headers["Content-Type"] = "application/octet-stream"
    request = urllib.request.Request(os.environ["AGENTENV_HARBOR_EXEC"] + path, data=body, headers=headers)
    return _OPENER.open(request, timeout=timeout)


def run_command(args: list[str]) -> int:
    """One command, no terminal: its output written, its exit code returned."""
    with door("", json.dumps({"args": args, "cwd": os.getcwd()}).encode()) as reply:
        done = json.load(reply)
    sys.stdout.buffer.write(done["stdout"].encode("utf-8", "surrogateescape"))
    sys.stdout.flush()
    sys.stderr.buffer.write(done["stderr"].encode("utf-8", "surrogateescape"))
    sys.stderr.flush()
    return int(done["exit_code"])


def run_terminal(args: list[str]) -> int:
    """A terminal in the environment joined to this one until the environment's bash exits."""
    import termios
    import tty

    size = shutil.get_terminal_size()
    opening = {"args": args, "cwd": os.getcwd(), "rows": size.lines, "cols": size.columns}
    with door("/session", json.dumps(opening).encode()) as reply:
        session = "/session/" + json.load(reply)["id"]
    signal.signal(signal.SIGHUP, lambda *_: _hang_up(session))
    saved = termios.tcgetattr(0)
    tty.setraw(0, termios.TCSANOW)  # not TCSAFLUSH: what was typed before stays to be sent
    threading.Thread(target=_typing, args=(session,), daemon=True).start()
    try:
        with door(session + "/output") as stream:
            while chunk := stream.read1(65536):
                os.write(1, chunk)
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
    with door(session + "/exit") as reply:
        return int(json.load(reply)["exit_code"])


def _typing(session: str) -> None:
    while data := os.read(0, 65536):
        door(session + "/input", data).close()


def _hang_up(session: str) -> None:
    """The terminal went (tmux killed the pane): the environment's side goes too."""
    try:
        door(session + "/close", b"", timeout=10).close()
    finally:
        os._exit(128 + signal.SIGHUP)


def main() -> None:
    args = sys.argv[1:]
    on_terminal = os.isatty(0) and (runs_a_command(args) or interactive(args))
    if not on_terminal and not runs_a_command(args):
        os.execv(REAL_BASH, [sys.argv[0], *args])
    try:
        code = run_terminal(args) if on_terminal else run_command(args)
    except OSError as exc:  # urllib's errors are OSErrors: the door refused or did not answer
        sys.stderr.write(f"bash: the task's environment did not answer: {exc}\n")
        code = NO_ANSWER
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
