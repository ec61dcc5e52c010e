"""The corpus of invalid task documents: each one reports exactly the problems its manifest lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from prefect_agentenv.cli import app
from prefect_agentenv.documents import Problem, validate_file

CORPUS = Path(__file__).parent / "invalid"
MANIFEST: dict[str, list[dict[str, Any]]] = yaml.safe_load((CORPUS / "expected.yaml").read_text(encoding="utf-8"))
DOCUMENTS = sorted(
    p.name for p in CORPUS.iterdir() if p.suffix in (".json", ".yaml", ".yml") and p.name != "expected.yaml"
)
ENTRY_KEYS = {"step_id", "path", "contains", "message", "hint", "line", "column"}


def matches(problem: Problem, expected: dict[str, Any]) -> bool:
    if problem.step_id != expected["step_id"] or problem.path != expected["path"]:
        return False
    if "contains" in expected and expected["contains"] not in problem.message:
        return False
    if "message" in expected and problem.message != expected["message"]:
        return False
    if "hint" in expected and expected["hint"] not in (problem.hint or ""):
        return False
    return all(getattr(problem, key) == expected[key] for key in ("line", "column") if key in expected)


def describe(problems: list[Problem]) -> str:
    return "\n".join(f"  step_id={p.step_id!r} {p.render()}" for p in problems) or "  (none)"


def test_the_manifest_and_the_corpus_name_the_same_documents() -> None:
    assert sorted(MANIFEST) == DOCUMENTS


def test_the_corpus_has_at_least_thirty_documents_in_json_and_yaml() -> None:
    assert len(DOCUMENTS) >= 30
    assert {Path(name).suffix for name in DOCUMENTS} == {".json", ".yaml"}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_every_manifest_entry_names_a_step_id_a_path_and_a_message(name: str) -> None:
    assert MANIFEST[name], f"{name} lists no expected problems"
    for entry in MANIFEST[name]:
        assert set(entry) <= ENTRY_KEYS, f"{name}: unknown keys {set(entry) - ENTRY_KEYS}"
        assert {"step_id", "path"} <= set(entry), f"{name}: {entry} needs step_id and path"
        assert "contains" in entry or "message" in entry, f"{name}: {entry} needs contains or message"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_an_invalid_document_reports_each_expected_problem_at_its_step_and_path(name: str) -> None:
    result = validate_file(CORPUS / name)

    assert not result.ok
    assert result.document is None
    for problem in result.problems:
        assert problem.path.startswith("$"), f"reported without a JSON path: {problem.render()}"
        assert problem.severity == "error"
    missing = [e for e in MANIFEST.get(name, []) if not any(matches(p, e) for p in result.problems)]
    assert not missing, f"{name}: not reported:\n" + "\n".join(f"  {e}" for e in missing) + (
        f"\nreported:\n{describe(result.problems)}"
    )


@pytest.mark.parametrize("name", DOCUMENTS)
def test_an_invalid_document_reports_nothing_beyond_its_expected_problems(name: str) -> None:
    result = validate_file(CORPUS / name)

    unexpected = [p for p in result.problems if not any(matches(p, e) for e in MANIFEST.get(name, []))]
    assert not unexpected, f"{name}: reported but not in the manifest:\n{describe(unexpected)}"


@pytest.mark.parametrize("name", ["invalid-json.json", "invalid-yaml.yaml"])
def test_a_document_that_does_not_parse_reports_one_problem_with_line_and_column(name: str) -> None:
    result = validate_file(CORPUS / name)

    [problem] = result.problems
    assert problem.line is not None and problem.column is not None
    assert f"(line {problem.line}, column {problem.column})" in problem.render()


def test_a_document_with_several_problems_reports_all_of_them_in_one_pass() -> None:
    result = validate_file(CORPUS / "several-problems.json")

    problems = result.problems
    assert len({(p.step_id, p.path) for p in problems}) >= 6
    assert {p.step_id for p in problems} == {"inbox", "assistant", "reply", "tone"}


def test_a_file_that_cannot_be_read_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    result = validate_file(tmp_path / "missing.json")

    [problem] = result.problems
    assert problem.path == "$"
    assert "cannot read the file" in problem.message


@pytest.mark.parametrize("name", [
    "collect-artifact-path-climbs-out.json", "verify-sandbox-probe-path-climbs-out.json",
    "verify-sandbox-criteria-probe-path-climbs-out.yaml", "negative-verifier-weight.json",
])
def test_validate_refuses_what_a_run_would_only_fail_on_later_with_the_step_and_the_json_path(name: str) -> None:
    result = CliRunner().invoke(app, ["validate", str(CORPUS / name)])

    assert result.exit_code == 2, result.output
    for entry in MANIFEST[name]:
        assert f"step '{entry['step_id']}' at {entry['path']}: " in result.output, result.output
