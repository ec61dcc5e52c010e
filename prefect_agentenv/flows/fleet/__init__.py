"""How a benchmark starts its task runs and follows them to their results.

* ``dispatch`` — one task run started and awaited: in the benchmark's process, as a task run, or
  as a flow run on a work pool.
* ``task_runs`` — a task document run as a task run of the benchmark's flow run.
* ``shards`` — task runs sent to a pool several at a time, as subflows of one shard flow run.
* ``shard_items`` — what a shard flow run is handed: its task runs, one by one.
"""
