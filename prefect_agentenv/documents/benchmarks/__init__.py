"""Benchmark documents: the model, its validation, sweeps, and what it lends its tasks.

* ``document`` — the benchmark model: tasks (step documents or Verial-style tasks), seeds, epochs.
* ``validation`` — every problem of a benchmark document at once, each at its JSON path.
* ``matrix`` — a sweep's matrix of run overrides, crossed into cells.
* ``infrastructure`` — how task runs that failed for infrastructure are treated.
* ``linked`` — default envs and a dataset a benchmark lends its Verial-style tasks.
"""
