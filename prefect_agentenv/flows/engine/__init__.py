"""The engine: how steps are run, whatever runs them.

Every path that runs steps — the flows, the step tasks (``tasks``), ``AgentSession`` and the
Python API's scoring — opens its run through ``run_scope`` and runs each step through
``execute``, so placeholders, retries and what a failure records never differ by path.

* ``run_scope`` — ``open_run``: a run's resources created, bound and torn down (and
  ``open_scoring_run`` for an attempt of isolated scoring).
* ``execute`` — ``execute_step``: one step with its ``${VAR}``s filled, its retries, and its end
  recorded (completed, tolerated with its ``failed_steps`` row and errored verification, or raised).
* ``task_runner`` — the phases of one task document's run (open, validate, run the steps, score,
  report), teardown guaranteed.
* ``scheduler`` — the DAG scheduler: starts each step as soon as its dependencies finish, re-runs
  a span for a retry from an ancestor, and the first fatal failure cancels the rest. It knows
  nothing of Prefect.
* ``step_tasks`` — the flow's runner: each attempt as a Prefect task run (graph edges, a step's
  own retries as task retries), or plainly without Prefect.
* ``scoring_placement`` — isolated scoring: the submission restored into fresh envs and scored,
  attempt by attempt (the flow's and the Python API's).
"""
