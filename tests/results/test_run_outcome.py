"""A benchmark run's outcome is decided once: the order of its verdicts, its exit code, its line and
its Prefect state agree, and the exit codes are the one table docs/reliability.md draws."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prefect_agentenv.exit_codes import ExitCode
from prefect_agentenv.results.comparison.gate import GateResult
from prefect_agentenv.results.run_outcome import decide, verdict_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
FAILED_GATE = GateResult(passed=False, reason="mean score 0.000 is under 0.5")
PASSED_GATE = GateResult(passed=True, reason="mean score 1.000 is at least 0.5")


def outcome(**given: object):  # type: ignore[no-untyped-def]
    args = {"infrastructure_error": None, "not_run": 0, "judge_gate": None, "gate": None, "total": 4,
            "run_id": "r1", **given}
    return decide(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("given", "verdict", "code"), [
    ({"infrastructure_error": "2 of 4 failed", "not_run": 1, "judge_gate": "x", "gate": FAILED_GATE},
     "infrastructure", ExitCode.INFRASTRUCTURE),
    ({"not_run": 1, "judge_gate": "x", "gate": FAILED_GATE}, "budget", ExitCode.BUDGET),
    ({"judge_gate": "x", "gate": FAILED_GATE}, "judge_gate", ExitCode.JUDGE_GATE),
    ({"gate": FAILED_GATE}, "gate", ExitCode.GATE),
    ({"total": 0}, "nothing_ran", ExitCode.FAILED),
    ({"gate": PASSED_GATE}, "ran", ExitCode.OK),
    ({}, "ran", ExitCode.OK),
])
def test_the_first_verdict_that_holds_decides_in_order(given: dict[str, object], verdict: str,
                                                       code: ExitCode) -> None:
    decided = outcome(**given)
    assert (decided.verdict, decided.exit_code) == (verdict, code)


def test_every_non_zero_exit_is_a_failed_state_with_a_name_that_says_why_and_one_line() -> None:
    for given in ({"infrastructure_error": "e"}, {"not_run": 2}, {"judge_gate": "j"}, {"gate": FAILED_GATE},
                  {"total": 0}):
        decided = outcome(**given)
        assert decided.failed and decided.exit_code != ExitCode.OK and decided.state_name != "Completed"
        assert decided.line and "\n" not in decided.line
    assert outcome(not_run=2).line == "budget spent: 2 task run(s) not run; resume with --resume r1 and a larger budget"
    assert not outcome().failed and outcome().state_name == "Completed"


def test_the_summary_line_says_the_same_verdict() -> None:
    assert verdict_markdown(outcome(gate=FAILED_GATE)).strip() == "**Gate failed:** mean score 0.000 is under 0.5"
    assert verdict_markdown(outcome(gate=PASSED_GATE)).strip() == "**Gate passed:** mean score 1.000 is at least 0.5"
    assert verdict_markdown(outcome(not_run=1)).strip().startswith("**Budget spent:** 1 task run(s) not run")
    assert verdict_markdown(outcome()) == ""


def test_the_exit_codes_are_the_table_docs_reliability_draws() -> None:
    text = DOCS.read_text()
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    drawn = {int(code): name for code, name in re.findall(r"^\| (\d+) \| `(\w+)` \|", table, re.M)}
    assert drawn == {int(member): member.name for member in ExitCode}
