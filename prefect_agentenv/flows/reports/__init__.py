"""What a run leaves behind, and reading it back.

* ``report`` — the run report (a stable JSON contract) and the Prefect artifacts in the UI.
* ``results`` — the benchmark results store: results, frozen task snapshots, the runs index.
* ``benchmark_result`` — what a benchmark run returns.
* ``fingerprint`` — what produced a benchmark result: agents, models, judges, overrides, versions.
* ``run_lookup`` — a benchmark run named on the command line or in a deployment.
* ``baseline`` — the run a benchmark run is compared with, and the paired comparison with it.
* ``links`` — links the Prefect UI can open (flow runs, presigned URLs, files).
* ``view_data`` — what the HTML report shows, gathered from the artifact store.
"""
