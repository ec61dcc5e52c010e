"""Launching and stopping what a run starts, and the resources of one running task.

* ``run`` — a running task's resources, reached from steps through ``current_run()``.
* ``launch`` / ``launchers`` — the launcher interface, the registry of launcher kinds and the
  launchers of one run; ``process``, ``docker`` and ``url`` are the built-in kinds, and a plugin
  adds its own through the ``prefect_agentenv.launchers`` entry-point group; ``supervisor``
  stops a process tree when its parent dies; ``tree`` finds what a server started outside its
  process group.
* ``teardown`` / ``stop`` / ``leftovers`` — stopping what a run started: on every ending, from
  outside, and what a killed run left behind.
* ``sandbox`` — per-agent work folders and the host view of their paths.
* ``confined`` / ``bwrap`` — the ``confined`` launcher kind: an agent under bubblewrap, seeing its
  sandbox, the system and its install folders only.
* ``guest_server`` — an ASGI app served from the run's own event loop (the mock model, the gateway).
* ``pool`` — warm pools of envs and agents across a benchmark's task runs.
* ``command`` / ``script_runner`` — short-lived commands and run_code scripts, bounded.
* ``ports`` / ``paths`` / ``overrides`` — free loopback ports, output-path checks, run overrides.
* ``local_server`` — the local Prefect server of an agentenv home: started in the background,
  found, health-checked and stopped by the PID it recorded.
"""
