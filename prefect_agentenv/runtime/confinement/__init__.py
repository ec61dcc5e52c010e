"""The agent under evaluation is untrusted: its box, its doors, and grading out of its reach.

* ``confined`` / ``bwrap`` — the ``confined`` launcher kind: an agent under bubblewrap, seeing its
  sandbox, the system and what its command needs only.
* ``command_needs`` / ``sight`` — what a confined command needs to see, found from its own command line
  (``#!`` chains, venvs, ``sh -c`` strings), and the failure before start naming what it would not see.
* ``cgroups`` / ``disk`` — a cgroup per agent: its processes and memory bounded as a whole; the disk its
  sandbox takes, watched.
* ``netns`` / ``netns_inside`` / ``network_allow`` — its network namespace, the forwarders that are
  its only doors, and how a block or a step widens them.
* ``grading_box`` / ``fresh_container`` / ``shadowing`` — grading on a fresh copy of its work, confined or in a
  fresh container, with what it planted set aside (modules named as the grading Python's own included), its
  Python on a safe import path (``grading_site``).
"""
