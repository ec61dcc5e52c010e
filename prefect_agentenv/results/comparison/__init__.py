"""A run against another: the paired comparison, the gates, and a benchmark run's verdicts.

* ``compare`` — a run against a baseline, pair by pair; ``compare_markdown`` — its markdown.
* ``sweep_baseline`` — a sweep's cells against the baseline's.
* ``gate`` — a pipeline's minimum score and no-regression check.
* ``verdicts`` — the verdicts a benchmark run ends with.
"""
