"""Step types, one module each, registered through the ``prefect_agentenv.steps`` entry points.

Each module at this level is one step type: its fields model and its ``run(step, ctx)``. Two
modules are not steps: ``base`` (the fields every step has, and the ``Provides``/``Requires``
markers that tie steps together by name) and ``registry`` (document ``type`` → fields model and
run function). What several steps share lives in :mod:`prefect_agentenv.run_services`.
"""
