"""The Prefect flows, and what they stand on.

The flows themselves sit at the top of this package:

* ``agent_task`` — the ``agent-task`` flow: one task document, each step a task run.
* ``agent_task_run`` — the same task document as a task run of a benchmark's flow run.
* ``benchmark`` — the ``benchmark`` flow: every task × seed × epoch (× sweep cell) of a benchmark;
  ``benchmark_dispatch`` starts and follows its task runs, ``benchmark_source`` reads its file or
  published version.
* ``rescore`` — the ``rescore`` flow: a benchmark run scored again from its kept submissions
  (``rescoring`` does the work, for the flow and the CLI).

Below them, three sub-packages:

* :mod:`~prefect_agentenv.flows.engine` — running steps: the run scope and ``execute_step`` that
  every path uses, the DAG scheduler, a step as a Prefect task run, the phases of a run with
  teardown, isolated scoring.
* :mod:`~prefect_agentenv.flows.adapters` — where the flows meet Prefect: parameters, tags,
  events, logs, cancellation, API health, subflow starts, fleets.
* :mod:`~prefect_agentenv.flows.reports` — what a run leaves behind: the report and UI artifacts,
  the benchmark results store, links, and the data of the HTML report.
"""
