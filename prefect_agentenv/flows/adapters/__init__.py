"""Where the flows meet Prefect: each module adapts one Prefect mechanism, or works around one.

* ``json_flow`` — a flow whose parameters reach the API as plain JSON, its schema built lazily.
* ``task_parameter`` — the ``task`` parameter in every form the UI, the CLI or Python hand it.
* ``subflow_start`` — starting a benchmark's subflows without Prefect's 2 s back-off.
* ``task_tags`` / ``run_tags`` — the tags a step's task run and a task's flow run carry.
* ``step_log`` — what each step did, in its task run's log.
* ``events`` — the benchmark's Prefect events (task results, regressions).
* ``cancellation`` — Prefect cancellation of a run that no worker supervises.
* ``api_health`` — whether the Prefect API is still there, so a run can finish without it.
* ``stale`` — flow runs of a killed process on this host, marked Crashed.
* ``fleet`` — following flow runs a benchmark dispatched to a work pool.
* ``step_tasks`` — a step's attempt as a Prefect task run (graph edges, its retries as task retries).
* ``failures`` — whose failure a task run was (agent or infrastructure), and the retries it gets.
"""
