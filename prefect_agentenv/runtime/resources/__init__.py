"""The resources of one running task, and how they end.

* ``run`` — a running task's resources, reached from steps through ``current_run()``.
* ``sandbox`` — per-agent work folders and the host view of their paths.
* ``teardown`` / ``stop`` / ``leftovers`` — stopping what a run started: on every ending, from
  outside, and what a killed run left behind.
* ``pool`` — warm pools of envs and agents across a benchmark's task runs.
* ``overrides`` / ``paths`` — run overrides, parsed once, and output-path checks made up front.
"""
