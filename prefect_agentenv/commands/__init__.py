"""Sub-commands of the ``prefect-agentenv`` CLI, one module per noun."""
