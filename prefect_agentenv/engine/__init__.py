"""The engine: how steps are run, whatever runs them. Nothing here imports Prefect.

Every path that runs steps — the flows, the step tasks (``tasks``), ``AgentSession`` and the
Python API's scoring — opens its run through ``run_scope`` and runs each step through
``execute``, so placeholders, retries and what a failure records never differ by path. The flows
(:mod:`prefect_agentenv.flows`) wrap it in Prefect: a step as a task run, a task as a flow run.

* ``run_scope`` — ``open_run``: a run's resources created, bound and torn down (and
  ``open_scoring_run`` for an attempt of isolated scoring).
* ``execute`` — ``execute_step``: one step with its ``${VAR}``s filled, its retries, and its end
  recorded (completed, tolerated with its ``failed_steps`` row and errored verification, or raised).
* ``scheduler`` — the DAG scheduler: starts each step as soon as its dependencies finish, re-runs
  a span for a retry from an ancestor, and the first fatal failure cancels the rest.
* ``scoring_placement`` — isolated scoring: the submission restored into fresh envs and scored,
  attempt by attempt (the flow's and the Python API's).
* ``submission_record`` — what an agent submitted, kept so a run can be scored again.
* ``reporting`` — a task run's report built from what its schedule did.
* ``benchmark_source`` — a benchmark's tasks, read from its file or a published version.
"""
