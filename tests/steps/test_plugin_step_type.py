"""A step type from a plugin, end to end: the test plugin's ``test_reply_words`` (the worked plugin of
docs/step-types.md) is found through its entry point, is written against ``prefect_agentenv.plugin``
alone, is validated like a built-in step, and runs in a real task beside a real agent."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import agentenv_teststeps
import pytest
from agentenv_teststeps import reply_words

import prefect_agentenv.plugin as plugin
from prefect_agentenv.context import PromptResponse, RunContext
from prefect_agentenv.documents import validate_data
from prefect_agentenv.exceptions import NotInContextError
from prefect_agentenv.steps.registry import ENTRY_POINT_GROUP, all_steps

from .helpers import run_doc

PLUGIN = Path(agentenv_teststeps.__file__).parent
DOC = Path(__file__).resolve().parents[2] / "docs" / "step-types.md"
REPLY = "I replied to Dana: I corrected the September total in the Q3 numbers and signed the email."


def agent_and_prompt(reply: str = REPLY) -> list[dict[str, Any]]:
    return [
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "agent_config": {"plan": {"reply": reply}}},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana.", "depends_on": ["assistant"]},
    ]


def words_step(**fields: Any) -> dict[str, Any]:
    return {"id": "words", "type": "test_reply_words", "prompt_id": "reply", "depends_on": ["reply"], **fields}


def test_the_plugin_step_type_is_found_through_its_entry_point() -> None:
    (entry,) = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "test_reply_words"]

    assert entry.dist is not None and entry.dist.name == "agentenv-teststeps"
    assert entry.value == "agentenv_teststeps.reply_words:definition"
    assert all_steps()["test_reply_words"] is reply_words.definition


def test_the_plugin_takes_everything_it_uses_of_the_package_from_the_toolkit_module() -> None:
    imported = set()
    for path in sorted(PLUGIN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    assert {m for m in imported if m.split(".")[0] == "prefect_agentenv"} == {"prefect_agentenv.plugin"}


def test_a_document_using_the_plugin_step_validates_with_its_default_aggregator() -> None:
    result = validate_data([*agent_and_prompt(), words_step(must_use=["Dana"], weight=2)])

    assert result.ok, [p.render() for p in result.problems]
    assert result.document is not None
    step = result.document.step("words")
    assert (step.verifier_id, step.score_aggregator, step.weight) == ("words", "weighted_average", 2.0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("steps", "path", "says"), [
    ([words_step(must_use=["Dana"], depends_on=None)], "$[0].prompt_id",
     "prompt 'reply' is not provided by any ancestor step"),
    ([*agent_and_prompt(), words_step()], "$[2].must_use", "give at least one word to look for"),
    ([*agent_and_prompt(), words_step(must_use=["Dana"], must_not_use=["dana"])], "$[2].must_not_use",
     "dana: in must_use and in must_not_use"),
    ([*agent_and_prompt(), words_step(must_use=["Dana"], weight=-1)], "$[2].weight",
     "a verifier's weight in the task score cannot be negative"),
    ([*agent_and_prompt(), words_step(must_use=["Dana"], must_uses=["x"])], "$[2].must_uses",
     "unknown field 'must_uses'"),
])
def test_a_bad_plugin_step_is_reported_at_its_step_and_json_path(steps: list[dict[str, Any]], path: str,
                                                                  says: str) -> None:
    result = validate_data(steps)

    assert not result.ok
    assert [(p.step_id, p.path) for p in result.problems] == [("words", path)], [p.render() for p in result.problems]
    assert says in result.problems[0].message


@pytest.mark.usefixtures("agentenv_home")
async def test_the_plugin_step_grades_a_real_agents_reply_in_a_task_run() -> None:
    report = await run_doc([*agent_and_prompt(),
                            words_step(must_use=["Dana", "September", "invoice"], must_not_use=["salary"])])

    assert report.status == "completed", report.error
    verification = report.context.metadata.verifications["words"]
    assert [(r.id, r.result, r.weight) for r in verification.results] == [
        ("uses:Dana", "pass", 1.0), ("uses:September", "pass", 1.0), ("uses:invoice", "fail", 1.0),
        ("uses:salary", "fail", -1.0)]
    assert verification.aggregator == "weighted_average" and verification.format == "reply_words"
    assert verification.score == pytest.approx(2 / 3)


@pytest.mark.usefixtures("agentenv_home")
async def test_a_penalty_word_in_the_reply_costs_its_weight() -> None:
    report = await run_doc([*agent_and_prompt("Dana, your salary is in the sheet."),
                            words_step(must_use=["Dana", "sheet"], must_not_use=["salary"])])

    assert report.status == "completed", report.error
    assert report.context.metadata.verifications["words"].score == pytest.approx(0.5)


@pytest.mark.usefixtures("agentenv_home")
async def test_a_failed_prompt_scores_0_without_looking_for_words() -> None:
    steps = agent_and_prompt()
    steps[0]["agent_config"] = {"plan": {"fail": {"error_type": "tool_error", "message": "mailbox locked"}}}
    steps[1]["fail_task_on_error"] = False
    report = await run_doc([*steps, words_step(must_use=["Dana"])])

    verification = report.context.metadata.verifications["words"]
    assert (verification.score, [r.id for r in verification.results]) == (0.0, ["prompt_error"])


async def test_a_reply_no_ancestor_left_fails_the_step_with_its_id_and_type() -> None:
    step = reply_words.ReplyWordsStep.model_validate(words_step(must_use=["Dana"]))

    with pytest.raises(NotInContextError, match="Prompt 'reply' not found") as caught:
        await reply_words.run(step, RunContext())
    assert (caught.value.step_id, caught.value.step_type) == ("words", "test_reply_words")


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_worked_plugin_in_the_docs_is_the_test_plugins_own_code() -> None:
    doc = DOC.read_text()
    python = code_blocks(doc, "python")
    sources = "\n".join(path.read_text() for path in sorted(PLUGIN.glob("*.py")))

    assert python[0] == (PLUGIN / "reply_words.py").read_text(), "docs/step-types.md shows another reply_words.py"
    for block in python[1:]:
        assert block in sources, f"not in the test plugin:\n{block}"
    pyproject = (PLUGIN.parent / "pyproject.toml").read_text()
    for block in code_blocks(doc, "toml"):
        assert all(line in pyproject for line in block.splitlines()), block


async def test_the_example_in_the_toolkits_docstring_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = (plugin.__doc__ or "").splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("::")) + 1
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    module = ModuleType("toolkit_example")  # a module of its own, as a plugin's step module is
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(textwrap.dedent("\n".join(lines[start:end])), module.__dict__)  # noqa: S102 - the documented example itself
    namespace = module.__dict__
    step = namespace["ShortReplyStep"].model_validate({"id": "short", "type": "short_reply", "prompt_id": "reply"})
    ctx = RunContext(prompt_responses={"reply": PromptResponse(prompt_id="reply", prompt="Hi", response="Hello.")})

    ctx = await namespace["definition"].run(step, ctx)
    assert ctx.metadata.verifications["short"].score == 1.0
