"""Where a benchmark run's results are kept, and how a run is found again.

* ``run_store`` — results, frozen task snapshots and the runs index, in the artifact store.
* ``scoring_versions`` / ``scoring_store`` — a run's scoring versions: its own, then each rescore.
* ``run_lookup`` — a run named on the command line; ``baseline`` — the run compared with.
* ``fingerprint`` — what produced a result; ``benchmark_result`` — what a benchmark run returns.
"""
