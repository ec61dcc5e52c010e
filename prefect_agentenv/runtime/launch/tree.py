"""A server's whole process tree, beyond its process group: what it started in sessions of their own.

Coding-agent wrappers start each CLI turn with ``start_new_session=True`` (so they can kill the
turn's group), and OpenHands' terminal starts a tmux server, which daemonizes; neither is in the
server's process group, so stopping the group alone can leave them running. A launch that follows
its tree (``LaunchSpec.follow_tree``) gives the server :data:`INSTANCE_MARKER` in its environment,
which everything it starts inherits; at its stop, every process carrying the marker, and every
live descendant of one (a child that was handed a cleared environment), is killed. The supervisor
(``runtime/launch/supervisor.py``) does the same when the run dies; this module is the launcher's own
last sweep. Linux only (``/proc``); elsewhere it finds nothing.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

INSTANCE_MARKER = "PREFECT_AGENTENV_INSTANCE_ID"
"""Environment variable naming the instance in every process a tree-following launch starts."""


def tree_of(instance_id: str) -> set[int]:
    """Live processes carrying ``instance_id``'s marker, and their descendants (never this process)."""
    needle = f"{INSTANCE_MARKER}={instance_id}".encode()
    marked: set[int] = set()
    parents: dict[int, int] = {}
    for entry in _pids():
        stat = _stat(entry)
        if stat is None or stat[0] == "Z":
            continue
        parents[entry] = stat[1]
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            marked.add(entry)
    found = set(marked)
    grew = True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found and pid not in found}
        found |= children
        grew = bool(children)
    found.discard(os.getpid())
    return found


def kill_tree(instance_id: str) -> list[int]:
    """SIGKILL what :func:`tree_of` finds; the pids signalled."""
    killed = []
    for pid in sorted(tree_of(instance_id)):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return killed


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid`` from ``/proc/<pid>/stat``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])
