"""A judge setup's calibration pools the labels of its criteria across runs, and one that cannot be
trusted (κ undefined, too few labels of a class) says why and is not calibrated.

The store is a real local artifact store; the judged criteria are what a run's reports would give.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.grading.judge import JudgeCriterion
from prefect_agentenv.grading.judge_setup import JudgeIdentity, judge_setup
from prefect_agentenv.results.judges.calibration import (
    JudgedCriterion,
    calibrate,
    describe_calibration,
    judge_trust,
    save_calibration,
)
from prefect_agentenv.results.judges.label_pool import label_pool, where_labels_are
from prefect_agentenv.results.judges.labels import HumanLabel, save_labels

pytestmark = pytest.mark.usefixtures("agentenv_home")

CRITERIA = [JudgeCriterion(id="polite", criterion="Polite."), JudgeCriterion(id="explains", criterion="Explains.")]
SETUP = judge_setup([JudgeIdentity(id="judge", model="mock", prompt="p")], CRITERIA)
OTHER = judge_setup([JudgeIdentity(id="judge", model="gpt-4.1", prompt="p")], CRITERIA)
REWORDED = judge_setup([JudgeIdentity(id="judge", model="mock", prompt="p")],
                       [JudgeCriterion(id="polite", criterion="Courteous."), CRITERIA[1]])


def judged(setup: object, epochs: int = 4) -> list[JudgedCriterion]:
    """The judge passes polite and fails explains in every task run."""
    return [JudgedCriterion(task_id="reply", epoch=e, verifier_id="tone", criterion_id=cid, setup=setup,
                            judges={"judge": cid == "polite"}, panel=cid == "polite")
            for e in range(epochs) for cid in ("polite", "explains")]


def label(epoch: int, cid: str, verdict: str, *, setup: object = SETUP, reviewer: str = "ana") -> HumanLabel:
    return HumanLabel(task_id="reply", epoch=epoch, verifier_id="tone", criterion_id=cid, label=verdict,
                      reviewer=reviewer, criteria_hash=setup.criteria)  # type: ignore[attr-defined]


def agreeing(epochs: range) -> list[HumanLabel]:
    return [label(e, cid, "pass" if cid == "polite" else "fail") for e in epochs for cid in ("polite", "explains")]


def test_labels_of_two_runs_pool_and_each_run_is_named_with_its_share(agentenv_home: Path) -> None:
    with get_artifact_store() as store:
        save_labels(store, "mail", "a", agreeing(range(4)))
        save_labels(store, "mail", "c", [label(0, "explains", "fail")])
        save_labels(store, "mail", "z", [label(0, "polite", "pass", setup=REWORDED)])  # other criteria: not pooled
        pool = label_pool(store, [SETUP.criteria])
        assert [(run.benchmark, run.run_id) for run in pool] == [("mail", "a"), ("mail", "c")]
        [record] = calibrate([SETUP], [(run, judged(SETUP)) for run in pool], benchmark="mail", run_id="c")
        assert (record.labels, record.kappa, record.shortfall()) == (9, pytest.approx(1.0), None)
        assert where_labels_are(record.sources) == "labels: 8 on run mail/a, 1 on run mail/c"
        assert [(s.run_id, s.versions, s.used) for s in record.sources] == [("a", ["1"], 8), ("c", ["1"], 1)]
        assert save_calibration(store, record) == "1"
        trust = judge_trust(store, "mail", "reply", "tone", SETUP)
        assert trust.calibrated and trust.mock and trust.mark() == "calibrated κ 1.00 (9 labels)"
        meta = store.list_versions(f"calibration.{SETUP.fingerprint}")[-1]
        assert describe_calibration(store, meta) == (f"calibration of judge setup {SETUP.fingerprint}: κ 1.00 on "
                                                     "9 labels (8 on run mail/a, 1 on run mail/c)")
        # A run graded under another setup lends its labels to that setup only.
        records = calibrate([SETUP, OTHER], [(pool[0], judged(OTHER)), (pool[1], judged(SETUP))],
                            benchmark="mail", run_id="c")
        assert {r.fingerprint: r.labels for r in records} == {SETUP.fingerprint: 1, OTHER.fingerprint: 8}


def test_a_reviewers_later_label_replaces_their_earlier_one_and_two_reviewers_split_are_left_out(
        agentenv_home: Path) -> None:
    with get_artifact_store() as store:
        save_labels(store, "mail", "a", agreeing(range(4)))
        save_labels(store, "mail", "a", [label(0, "polite", "fail")])  # ana changed her mind on one item
        save_labels(store, "mail", "a", [label(1, "polite", "fail", reviewer="bo")])  # bo disagrees on another
        [run] = label_pool(store, [SETUP.criteria])
        [record] = calibrate([SETUP], [(run, judged(SETUP))], benchmark="mail", run_id="a")
    assert (record.labels, record.tied) == (7, 1)
    assert record.panel.overall.confusion.fp == 1 and record.reviewers.items == 1
    assert [s.versions for s in record.sources] == [["1", "2", "3"]]


def test_labels_that_hold_only_pass_leave_kappa_undefined_and_the_setup_not_calibrated(agentenv_home: Path) -> None:
    every_pass = [label(e, cid, "pass") for e in range(4) for cid in ("polite", "explains")]
    all_pass = [JudgedCriterion(task_id="reply", epoch=e, verifier_id="tone", criterion_id=cid, setup=SETUP,
                                judges={"judge": True}, panel=True) for e in range(4) for cid in ("polite", "explains")]
    with get_artifact_store() as store:
        save_labels(store, "mail", "a", every_pass)
        [record] = calibrate([SETUP], [(run, all_pass) for run in label_pool(store, [SETUP.criteria])],
                             benchmark="mail", run_id="a")
        assert record.kappa is None
        assert record.shortfall() == ("κ undefined: the labels hold only `pass` (label some failing criteria) "
                                      "(8 labels: 8 pass, 0 fail)")
        save_calibration(store, record)
        trust = judge_trust(store, "mail", "reply", "tone", SETUP)
    assert not trust.calibrated and not trust.meets(0.6)
    assert trust.mark() == ("not calibrated: κ undefined: the labels hold only `pass` (label some failing criteria) "
                            "(8 labels: 8 pass, 0 fail)")


def test_a_kappa_on_too_few_failing_labels_does_not_count(agentenv_home: Path) -> None:
    few = agreeing(range(4))[:-6] + [label(e, "polite", "pass") for e in (1, 2, 3)]  # 4 pass, 1 fail
    with get_artifact_store() as store:
        save_labels(store, "mail", "a", few)
        [record] = calibrate([SETUP], [(run, judged(SETUP)) for run in label_pool(store, [SETUP.criteria])],
                             benchmark="mail", run_id="a")
    assert record.kappa == pytest.approx(1.0)
    assert record.shortfall() == ("too few failing labels for κ 1.00 to hold: at least 3 of each class are needed "
                                  "(label more failing criteria) (5 labels: 4 pass, 1 fail)")
    assert record.brief().startswith("not calibrated: too few failing labels")
