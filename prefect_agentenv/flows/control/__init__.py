"""Steering a running benchmark: its live gate, its control and status Variables, and the record of changes.

* ``state`` — what an operator asks (the control Variable) and what the run says back (the status Variable).
* ``channel`` — the two Variables through Prefect's API; finding a run by id or slug.
* ``gate`` — the live gate that decides when a task run starts.
* ``inflight`` — the task runs queued or in flight: names, cancels, deadlines.
* ``requests`` — requeue and cancel.
* ``steering`` — the run's live queue, polling the control Variable and recording each change.
"""
