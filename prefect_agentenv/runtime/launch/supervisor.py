"""A tiny supervisor between the run and every command it starts: ``python -I -S supervisor.py PARENT_PID -- ARGV...``.

Run as a script (standard library only, no site import, so it starts in ~10 ms). It is the
leader of the command's process group and forks the command into that group. The launcher gives
it ``SIGUSR1`` as its parent-death signal, so when the run's process dies, even by SIGKILL, the
supervisor kills the **whole group**: the command, a shell wrapper's children that did not
``exec``, and whatever they forked. SIGTERM/SIGINT/SIGHUP reach the group directly, so the
supervisor ignores them and waits for the command. ``SIGUSR2`` (the launcher's "stop now")
makes it SIGKILL the rest of the group and reap the command, so nothing is left as a zombie for
an init that may not reap. When the command exits, the supervisor kills what is left of the
group and exits with the command's status (re-raising its signal). A command started with
``PREFECT_AGENTENV_INSTANCE_ID`` in its environment (a tree-following launch, see
``runtime/launch/tree.py``) also has every process carrying that marker, and their descendants, killed
with its group: what it started in sessions of their own.
"""

import os
import signal
import sys

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


_MARKER = "PREFECT_AGENTENV_INSTANCE_ID"


def _kill_group(signum=None, frame=None):
    """The run is gone: take the whole group down, this process included."""
    try:
        _kill_marked()
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(137)


def _kill_marked():
    """Kill the processes carrying this instance's marker, and their descendants (sparing this one)."""
    value = os.environ.get(_MARKER)
    if not value:
        return
    needle, me = f"{_MARKER}={value}".encode(), os.getpid()
    parents, found = {}, set()
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is None or fields[0] == b"Z":
            continue
        parents[pid] = int(fields[1])
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    grew = True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found and pid not in found}
        found |= children
        grew = bool(children)
    for pid in found - {me}:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _pids():
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def _stat_fields(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _stop_now(signum=None, frame=None):
    _sweep_group()


def _sweep_group():
    """Kill the rest of this process group (helpers the command left behind), sparing this process."""
    me, group = os.getpid(), os.getpgid(0)
    _kill_marked()
    for pid in _pids():
        if pid == me:
            continue
        fields = _stat_fields(pid)
        if fields is not None and int(fields[2]) == group:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def main():
    parent, argv = int(sys.argv[1]), sys.argv[3:]
    signal.signal(signal.SIGUSR1, _kill_group)
    if os.getppid() != parent:  # the run died before the handler was in place
        _kill_group()
    for sig in _STOP_SIGNALS:
        signal.signal(sig, lambda *_: None)
    signal.signal(signal.SIGUSR2, _stop_now)
    pid = os.fork()
    if pid == 0:
        for sig in (*_STOP_SIGNALS, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]!r}: {exc}\n".encode())
        os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
    _sweep_group()
    if os.WIFSIGNALED(status):
        died_of = signal.Signals(os.WTERMSIG(status))
        # Die of the same signal so the parent sees what the child saw; SIGKILL and SIGSTOP
        # cannot (and need not) have their handler reset.
        if died_of not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
