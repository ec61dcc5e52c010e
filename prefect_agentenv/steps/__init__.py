"""Step types: one module each, registered through the ``prefect_agentenv.steps`` entry points."""
