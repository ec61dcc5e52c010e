"""What a run leaves behind, and reading it back.

* ``report`` — the run report (a stable JSON contract) and the Prefect artifacts in the UI.
* ``results`` — the benchmark results store: results, frozen task snapshots, the runs index.
* ``task_results`` — one task run's result, made from its report (or from a crash that left none).
* ``scoring_versions``, ``scoring_store`` — a run's scoring versions (its own, then each rescore),
  and reading and writing them.
* ``failures`` — whose failure a task run was (agent or infrastructure), and the retries it gets.
* ``sweep`` — a sweep's cells: their results, summaries, gates and pairwise comparisons.
* ``benchmark_result`` — what a benchmark run returns.
* ``fingerprint`` — what produced a benchmark result: agents, models, judges, overrides, versions.
* ``run_lookup`` — a benchmark run named on the command line or in a deployment.
* ``baseline`` — the run a benchmark run is compared with, and the paired comparison with it.
* ``links`` — links the Prefect UI can open (flow runs, presigned URLs, files).
* ``view_data`` — what the HTML report shows, gathered from the artifact store.
* ``benchmark_artifacts`` — the benchmark's artifacts in the Prefect UI.
"""
