"""The engine: how one task document is run, whatever runs it.

* ``task_runner`` — the phases of one run (open, validate, run the steps, score, report),
  teardown guaranteed.
* ``scheduler`` — the DAG scheduler: starts each step as soon as its dependencies finish, with
  retries from ``retry_config`` and the first fatal failure cancelling the rest. It knows nothing
  of Prefect.
* ``step_tasks`` — each step as a Prefect task run (graph edges, retries), or plainly without
  Prefect.
* ``scoring_placement`` — isolated scoring: the submission restored into fresh envs and scored.
"""
