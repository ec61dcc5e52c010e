"""Starting and stopping servers and commands: the launcher seam and its built-in kinds.

* ``base`` — what a launcher is given (``LaunchSpec``), returns (``Instance``), and its interface.
* ``registry`` — the launcher kinds by name, and the launchers of one run.
* ``process`` / ``docker`` / ``url`` — the built-in kinds: a local process, a container, a live URL.
* ``supervisor`` / ``tree`` — a process tree stopped when its parent dies, and found whole.
* ``ports`` / ``guest_server`` — free loopback ports, and an ASGI app on the run's own event loop.
* ``reference`` — what a reference env or agent shipped in the package is, and its command.
* ``command`` / ``script_runner`` — short-lived commands and run_code scripts, bounded.
"""
