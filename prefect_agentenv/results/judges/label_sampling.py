"""Which task runs a reviewer labels: a sample stratified by the judge's verdict.

A sample drawn at random from a run whose judge passes most task runs would hold few the judge
failed, and calibration would learn little about its TNR. So task runs are split by the panel's
verdict on them (``pass``: every judged criterion passed; ``fail``: one did not; ``unscored``:
one was left unscored), each stratum gets a share of ``n`` proportional to its size but at least
one, and the draw is seeded, so a second reviewer given the same seed labels the same task runs.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from prefect_agentenv.results.judges.calibration import JudgedCriterion
from prefect_agentenv.results.rows import RunKey, StatsModel

__all__ = ["LabellingSample", "sample_for_labelling"]

Stratum = Literal["pass", "fail", "unscored"]


class LabellingSample(StatsModel):
    """One task run to label: its key, its stratum, and the judged criteria of each verifier."""

    key: RunKey
    stratum: Stratum
    criteria: list[JudgedCriterion]


def _stratum(criteria: Sequence[JudgedCriterion]) -> Stratum:
    if any(c.panel is None for c in criteria):
        return "unscored"
    return "pass" if all(c.panel for c in criteria) else "fail"


def sample_for_labelling(judged: Sequence[JudgedCriterion], n: int, *, seed: int = 0) -> list[LabellingSample]:
    """Up to ``n`` task runs, stratified by the judge's verdict (see the module docstring), in run-key order."""
    by_run: dict[RunKey, list[JudgedCriterion]] = defaultdict(list)
    for criterion in judged:
        by_run[criterion.item[0]].append(criterion)
    strata: dict[Stratum, list[RunKey]] = defaultdict(list)
    for key in sorted(by_run, key=RunKey.sort_key):
        strata[_stratum(by_run[key])].append(key)
    total = sum(len(keys) for keys in strata.values())
    if n >= total:
        chosen = [key for keys in strata.values() for key in keys]
    else:
        rng = random.Random(seed)
        shares = {s: max(1, round(n * len(keys) / total)) for s, keys in strata.items()}
        while sum(shares.values()) > n:  # rounding up every stratum can overshoot: trim the largest
            largest = max(shares, key=lambda s: shares[s])
            shares[largest] -= 1
        chosen = [key for s, keys in strata.items() for key in rng.sample(keys, min(shares[s], len(keys)))]
    return [LabellingSample(key=key, stratum=_stratum(by_run[key]), criteria=by_run[key])
            for key in sorted(chosen, key=RunKey.sort_key)]
