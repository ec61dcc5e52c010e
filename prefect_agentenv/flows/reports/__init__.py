"""What a run leaves behind, and reading it back.

* ``report`` — the run report (a stable JSON contract) and the Prefect artifacts in the UI.
* ``results`` — the benchmark results store: results, frozen task snapshots, the runs index.
* ``benchmark_result`` — what a benchmark run returns.
* ``links`` — links the Prefect UI can open (flow runs, presigned URLs, files).
* ``view_data`` — what the HTML report shows, gathered from the artifact store.
"""
