"""Launching and stopping what a run starts, and the resources of one running task.

Four rooms:

* ``launch`` — how a server or a command is started and stopped: the launcher interface
  (``base``), the registry of launcher kinds and the launchers of one run (``registry``), the
  built-in kinds ``process``, ``docker`` and ``url`` (a plugin adds its own through the
  ``prefect_agentenv.launchers`` entry-point group), the ``supervisor`` that stops a process tree
  when its parent dies, ``tree`` (what a server started outside its process group), ``ports``,
  ``guest_server`` (an ASGI app on the run's own event loop), and bounded short-lived commands
  (``command``, ``script_runner``).
* ``confinement`` — keeping the agent under evaluation in its box: the ``confined`` launcher kind
  over ``bwrap``, a cgroup per agent (``cgroups``), its network namespace and doors (``netns``,
  ``netns_inside``, ``network_allow``), and grading apart from it (``grading_box``,
  ``fresh_container``).
* ``resources`` — one running task's resources (``run``, reached through ``current_run()``), its
  sandboxes, the teardown registry, stopping from outside (``stop``), what a killed run left
  behind (``leftovers``), warm pools, run overrides and output-path checks.
* ``harbor`` — a Harbor task's environment: its image built once and cached by content (``images``),
  its container and the commands, copies and files of it (``environment``).
"""
