"""Pure statistics over result rows: they take :class:`TaskResult` rows and return models.

* ``intervals`` — pass@k, pass^k, Student t and Wilson intervals; ``paired`` — McNemar, the sign
  test, the paired bootstrap.
* ``summary`` — a run's summary; ``summary_markdown`` — the summary artifact's markdown.
* ``run_setup`` — a run's merged setup and how two differ.
* ``changes`` — what changed task by task (the HTML report's trend).
* ``sweep_summary`` — a run over several cells: each cell's summary, cells compared pair by pair.
"""
