"""Published benchmarks: a benchmark frozen as ``slug@version`` in the artifact store.

* ``snapshot`` — the frozen form and how it is made; ``store`` — stored once, read back checked;
  ``diff`` — what differs between two versions, task by task.
"""
