"""The forwarder inside a confined agent's network namespace (standard library only).

Run by the base Python installation (read-only inside) as the first process of the sandbox,
before the agent's own command. The namespace has only its own loopback, so the bridge crosses
it through Unix sockets in a folder both sides see (``runtime/confinement/netns.py`` holds the host's end):

* each door the host opened (a model endpoint, an env's MCP endpoint) is listened for on the
  same ``host:port`` inside, and each connection is passed to the door's socket, where the host
  side connects to the real endpoint (and filters what an MCP door may ask for);
* ``a2a.sock``: each connection the runner makes to the agent's A2A port is passed to the same
  port on this loopback, where the agent listens. It is made only once the agent's port accepts
  connections, and the host side listens on the port only then, so the runner's readiness check
  sees a refused port until the agent is up, as with an unconfined agent;
* ``control.sock``: a line ``listen <host> <port> <socket name>`` opens one more door (an env
  given to the agent after it started), answered by ``ok`` or ``error <why>``.

Every listener is bound before the agent's command starts, so the agent's first request finds
its door. The forwarder then leaves the command its process (exec) and goes on in a grandchild
that the sandbox's init adopts and reaps: the agent's command has no unknown child to wait for,
and the forwarder dies with the sandbox's PID namespace when the command exits.

    python -I -S forward.py <socket folder> <a2a host> <a2a port> [<host>:<port>=<socket> ...] -- <command ...>
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

_BUFFER = 65536
_BACKLOG = 128
_PORT_POLL_SECONDS = 0.01


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy one direction until its end, then half-close the other side (the answer may still come)."""
    try:
        while data := source.recv(_BUFFER):
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _join(client: socket.socket, upstream: socket.socket) -> None:
    """Both directions of one connection, each on its own thread; both sockets closed at the end."""
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, connect: object) -> None:
    """Accept forever; each connection joined to a new one to ``connect`` (a TCP address or a socket path)."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        family = socket.AF_UNIX if isinstance(connect, str) else socket.AF_INET
        upstream = socket.socket(family, socket.SOCK_STREAM)
        try:
            upstream.connect(connect)  # type: ignore[arg-type]
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_join, args=(client, upstream), daemon=True).start()


def _tcp_listener(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(_BACKLOG)
    return listener


def _unix_listener(path: str) -> socket.socket:
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(_BACKLOG)
    return listener


def _inside_host(host: str) -> str:
    """``localhost`` is this loopback's 127.0.0.1 (the only address a name can mean in here)."""
    return "127.0.0.1" if host == "localhost" else host


def _door(folder: str, host: str, port: int, name: str) -> tuple[socket.socket, str]:
    if "/" in name or name.startswith("."):
        raise ValueError(f"bad socket name {name!r}")
    return _tcp_listener(_inside_host(host), port), os.path.join(folder, name)


def _control(listener: socket.socket, folder: str) -> None:
    """One request per connection: open a door, answer ``ok`` once it listens."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        with client:
            try:
                words = client.makefile("r").readline().split()
                if len(words) != 4 or words[0] != "listen":
                    raise ValueError("expected: listen <host> <port> <socket name>")
                door, target = _door(folder, words[1], int(words[2]), words[3])
                threading.Thread(target=_serve, args=(door, target), daemon=True).start()
                client.sendall(b"ok\n")
            except (OSError, ValueError) as exc:
                client.sendall(f"error {exc}\n".encode())


def _await_port(address: tuple[str, int]) -> None:
    """Until the agent's port accepts a connection (a refused connect costs microseconds)."""
    while True:
        try:
            socket.create_connection(address, timeout=1.0).close()
            return
        except OSError:
            time.sleep(_PORT_POLL_SECONDS)


def _parse(argv: list[str]) -> tuple[str, tuple[str, int], list[tuple[str, int, str]], list[str]]:
    split = argv.index("--")
    folder, a2a_host, a2a_port, *doors = argv[:split]
    parsed = []
    for door in doors:
        address, name = door.split("=", 1)
        host, port = address.rsplit(":", 1)
        parsed.append((host, int(port), name))
    return folder, (_inside_host(a2a_host), int(a2a_port)), parsed, argv[split + 1:]


def main(argv: list[str]) -> None:
    """Bind every listener, then run the command here and serve from a grandchild."""
    folder, a2a, doors, command = _parse(argv)
    servers: list[tuple[socket.socket, object]] = [_door(folder, *door) for door in doors]
    control = _unix_listener(os.path.join(folder, "control.sock"))
    servers.append((control, None))
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        for listener, target in servers[:-1]:
            threading.Thread(target=_serve, args=(listener, target), daemon=True).start()
        threading.Thread(target=_control, args=(control, folder), daemon=True).start()
        _await_port(a2a)
        _serve(_unix_listener(os.path.join(folder, "a2a.sock")), a2a)
        os._exit(0)
    os.waitpid(child, 0)
    for listener, _ in servers:
        listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
