"""The Prefect flows, and what they stand on.

The flows sit at the top of this package:

* ``agent_task`` — the ``agent-task`` flow: one task document, each step a task run.
* ``agent_task_shard`` — several of a benchmark's task runs as subflows of one flow run on a pool.
* ``benchmark`` — the ``benchmark`` flow: every task × seed × epoch (× sweep cell) of a benchmark.
* ``rescore`` — the ``rescore`` flow: a benchmark run scored again from its kept submissions
  (``rescoring`` does the work, for the flow and the CLI).
* ``calibrate`` — the ``calibrate-judges`` flow: a run's judges against its human labels, as
  ``prefect-agentenv calibrate`` does.
* ``labelling`` — the ``label-judged-run`` flow: a reviewer labels a stratified sample of a run's
  judged criteria through paused forms in the Prefect UI (the labels calibrate its judges).
* ``task_runner`` — the phases of one task document's run in Prefect (open, run the steps as task
  runs, score, report, publish), teardown guaranteed.

Below them, three sub-packages:

* :mod:`~prefect_agentenv.flows.adapters` — where the flows meet Prefect: parameters, tags,
  events, logs, a step as a task run, failures and retries, cancellation, API health.
* :mod:`~prefect_agentenv.flows.fleet` — how a benchmark starts and follows its task runs: in its
  own process, as task runs, or on a work pool one or several at a time.
* :mod:`~prefect_agentenv.flows.ui` — what the Prefect UI shows: artifacts, links, the HTML report.

Running steps is :mod:`prefect_agentenv.engine` (no Prefect); results and their statistics are
:mod:`prefect_agentenv.results`.
"""
