"""Commands of the ``prefect-agentenv`` CLI, one module per command or command group (``cli`` registers them).

Beside them: ``progress`` (the live board ``bench`` draws), ``run_flow`` (a task's flow run as ``run``
starts it and every way it ends), ``_prefect_server`` (which Prefect server a command records on: the
user's, the home's local one, or the temporary one), and the helpers the commands share (``_options``,
``_registry``, ``_harnesses``, ``check``).
"""
