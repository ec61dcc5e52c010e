"""A module the agent adds never changes what a grading command runs: a planted ``pytest.py`` or ``json.py`` beside
a wrong solution is set aside, grading's Python starts with a safe import path, and the solution's own modules
stay importable by the task's tests. Real bubblewrap, real pytest; the agent's side is played by planted files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from prefect_agentenv.runtime.confinement.grading_box import open_box
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's")

WRONG_SOLUTION = "def add(a, b):\n    return a - b\n"
TASK_TEST = "import json\nfrom solution import add\n\n\ndef test_add():\n    assert json.loads(json.dumps(add(2, 3))) == 5\n"
FAKE_PYTEST = "print('1 passed')\nraise SystemExit(0)\n"
"""What a trojan ``pytest.py`` does: claim a pass before the real pytest is ever imported."""
FAKE_JSON = "def dumps(value):\n    return '5'\n\n\ndef loads(text):\n    return 5\n"
"""A ``json.py`` that makes any comparison through json agree with the test."""


def planted(app: Path) -> None:
    (app / "solution.py").write_text(WRONG_SOLUTION)
    (app / "pytest.py").write_text(FAKE_PYTEST)
    (app / "json.py").write_text(FAKE_JSON)
    (app / "unittest.py").write_text("raise SystemExit(0)\n")
    (app / "_pytest").mkdir()
    (app / "_pytest" / "__init__.py").write_text("raise SystemExit(0)\n")
    (app / "helpers").mkdir()
    (app / "helpers" / "__init__.py").write_text("")
    (app / "helpers" / "json.py").write_text("# helpers.json hides nothing\n")


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = create_sandbox(tmp_path / "run", "coder")
    app = box.root / "app"
    (app / "test_sol.py").write_text(TASK_TEST)
    box.note_task_files([app / "test_sol.py"])
    planted(app)
    return box


def test_unprotected_the_planted_pytest_passes_the_wrong_solution(tmp_path: Path) -> None:
    """The control: in the folder the agent left, the most common grading command reports a pass."""
    planted(tmp_path)
    (tmp_path / "test_sol.py").write_text(TASK_TEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "test_sol.py"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "1 passed")
    (tmp_path / "pytest.py").unlink()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sol.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, "the planted json.py alone makes the wrong solution pass too"


async def _grade(sandbox: Sandbox, parent: Path, line: str) -> tuple[int, str, list[str]]:
    box = open_box(sandbox, parent)
    try:
        done = await box.run(["bash", "-c", line], cwd="/app", env={}, run_id="grading-test", timeout=60,
                             max_output_bytes=64 * 1024, merge_stderr=True)
        return done.returncode, done.stdout.decode(errors="replace"), [s.render() for s in box.set_aside]
    finally:
        box.remove()


async def test_a_planted_pytest_and_json_cannot_pass_a_wrong_solution_and_are_recorded_set_aside(
        sandbox: Sandbox, tmp_path: Path) -> None:
    code, out, set_aside = await _grade(sandbox, tmp_path / "grading",
                                        "cd /app && python3 -m pytest -q -p no:cacheprovider test_sol.py")
    assert code == 1 and "1 failed" in out and "assert -1 == 5" in out, out
    assert set_aside == ["/app/_pytest (removed)", "/app/json.py (removed)", "/app/pytest.py (removed)",
                         "/app/unittest.py (removed)"]


async def test_the_solutions_own_modules_stay_importable_and_come_after_the_library(
        sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.root / "app" / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    (sandbox.root / "app" / "check_add.py").write_text("import json\nimport solution\nprint('script', solution.add(1, 1))\n")
    line = ("cd /app && python3 -m pytest -q -p no:cacheprovider test_sol.py"
            " && python3 -c 'import json, solution, helpers.json; print(json.__file__.startswith(\"/app\"), solution.add(2, 3))'"
            " && cd / && python3 /app/check_add.py")
    code, out, _ = await _grade(sandbox, tmp_path / "grading", line)
    assert code == 0 and "1 passed" in out and "False 5" in out and "script 2" in out, out


async def test_a_module_the_task_itself_loaded_under_a_library_name_is_kept(sandbox: Sandbox, tmp_path: Path) -> None:
    app = sandbox.root / "app"
    (app / "json.py").write_text("TASKS_OWN = True\n")
    sandbox.note_task_files([app / "json.py"])
    _, _, set_aside = await _grade(sandbox, tmp_path / "grading", "true")
    assert "/app/json.py (removed)" not in set_aside and "/app/pytest.py (removed)" in set_aside
    (app / "json.py").write_text("TASKS_OWN = False\n")
    code, out, set_aside = await _grade(sandbox, tmp_path / "grading", "cat /app/json.py")
    assert "/app/json.py (restored)" in set_aside and out.strip() == "TASKS_OWN = True", out
