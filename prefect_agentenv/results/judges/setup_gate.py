"""``--require-calibrated-judge K`` before a run: the judge setups it will grade under, against their calibrations.

The setups come from the documents and the defaults (``engine.judge_plan``); each one's trust is
read as a finished task run's would be (:func:`~prefect_agentenv.results.judges.calibration.judge_trust`).
One line says the verdict: the first setup that falls short with the command that fixes it, or
``judge gate: passed (lowest κ 1.00, tone)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.grading.judge_setup import JudgeSetup
from prefect_agentenv.results.judges.calibration import judge_trust
from prefect_agentenv.results.judges.label_pool import plural
from prefect_agentenv.results.rows import RubricTrust, StatsModel

__all__ = ["SetupGate", "check_setups"]


class SetupGate(StatsModel):
    """The judge gate's verdict on the setups known before a run."""

    passed: bool
    line: str
    """What to print: ``judge gate: passed (…)`` or ``judge gate failed: …``."""
    checked: list[RubricTrust]
    unknown: list[str] = []
    """Verifiers (``task/verifier``) whose setup is known only once their task runs: checked afterwards."""


def check_setups(store: ArtifactBackend, slug: str, setups: Sequence[tuple[str, str, JudgeSetup]], min_kappa: float,
                 *, unknown: Sequence[str] = ()) -> SetupGate:
    """Each ``(task id, verifier id, setup)`` against its calibration: a setup uncalibrated, stale,
    undefined or below ``min_kappa`` fails the gate."""
    checked: list[tuple[str, RubricTrust]] = []
    for task_id, verifier_id, setup in setups:
        trust = judge_trust(store, slug, task_id, verifier_id, setup).model_copy(update={"required_kappa": min_kappa})
        checked.append((task_id, trust))
    short = [(task_id, t) for task_id, t in checked if not t.meets(min_kappa)]
    later = f"; {plural(len(unknown), 'verifier')} checked after its task runs ({', '.join(unknown)})" if unknown else ""
    trusts = [t for _, t in checked]
    if short:
        return SetupGate(passed=False, line=_refusal(slug, short, min_kappa), checked=trusts, unknown=list(unknown))
    if not checked:
        line = f"judge gate: no judge setup is known before the run{later}"
    else:
        weakest = min(trusts, key=lambda t: t.kappa if t.kappa is not None else -2.0)
        kappa = f"{weakest.kappa:.2f}" if weakest.kappa is not None else "n/a"
        line = f"judge gate: passed (lowest κ {kappa}, {weakest.verifier_id}){later}"
    return SetupGate(passed=True, line=line, checked=trusts, unknown=list(unknown))


def _refusal(slug: str, short: Sequence[tuple[str, RubricTrust]], min_kappa: float) -> str:
    """One line: the first setup that falls short, how many more do, and the command to run."""
    task_id, first = short[0]
    setups = {t.fingerprint for _, t in short}
    more = f" (and {plural(len(setups) - 1, 'more setup')})" if len(setups) > 1 else ""
    if first.calibrated or first.shortfall:
        fix = (f"label more task runs graded under it: prefect-agentenv calibrate {slug} --template > labels.jsonl, "
               f"then prefect-agentenv calibrate {slug} --labels labels.jsonl")
    else:
        fix = (f"run it once without --require-calibrated-judge, then label that run: prefect-agentenv calibrate "
               f"{slug} --template > labels.jsonl, and prefect-agentenv calibrate {slug} --labels labels.jsonl")
    return (f"judge gate failed: {first.verifier_id} of {task_id} grades under judge setup {first.fingerprint} "
            f"({first.mark()}), short of κ {min_kappa:g}{more}; no task run was started. To calibrate it, {fix}")
