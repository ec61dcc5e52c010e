"""The judge setups of a benchmark's rubric verifiers, worked out before any task run starts: the
same fingerprint the verifier records when it grades, and a judge the task deploys itself named as
known only at run time. No model endpoint is configured, so the judges resolve to the built-in mock
model (labelled), as they would in the run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prefect_agentenv.engine.benchmark_source import load_source
from prefect_agentenv.engine.judge_plan import planned_setups
from prefect_agentenv.steps.rubrics_verifier import RubricsVerifierStep, setup_of

pytestmark = pytest.mark.usefixtures("agentenv_home")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "judge-gate.yaml"


async def test_a_model_judge_is_planned_as_it_will_grade_and_a_deployed_judge_agent_only_at_run_time(
        tmp_path: Path) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    steps = document["tasks"][0]["steps"]
    steps.append({"id": "facts", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "facts",
                  "depends_on": ["reply"], "agent_name": "assistant",
                  "criteria": [{"id": "numbers", "criterion": "The reply names the Q3 numbers."}]})
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(document))
    source = load_source(None, str(path))
    planned = await planned_setups(source.tasks, [{}, {"judge_model": "another-model"}])
    tone = [p for p in planned if p.verifier_id == "tone"]
    facts = [p for p in planned if p.verifier_id == "facts"]
    # Two seeds; the mock model answers whatever model is asked for, so both cells plan one setup per task.
    assert sorted(p.task_id for p in tone) == ["reply[seed=0]", "reply[seed=1]"]
    task = source.tasks[0]
    step = next(s for s in task.document.steps if isinstance(s, RubricsVerifierStep) and s.verifier_id == "tone")
    expected = setup_of(step, [("judge", "mock", "[mock-judge: fail c2]")], None)
    assert tone[0].setup == expected and tone[0].setup is not None and tone[0].setup.mock
    assert {p.task_id for p in facts} == {"reply[seed=0]", "reply[seed=1]"}
    assert all(p.setup is None and "deployed agent 'assistant'" in (p.unknown or "") for p in facts)
