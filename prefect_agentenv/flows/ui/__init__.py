"""What the Prefect UI shows of a run.

* ``task`` — a task run's summary, verifications and transcript artifacts.
* ``benchmark`` — a benchmark's artifacts: progress, summary, results table, report link.
* ``links`` — links the Prefect UI can open (flow runs, presigned URLs, files).
* ``view_data`` — what the HTML report shows, gathered from the artifact store.
"""
