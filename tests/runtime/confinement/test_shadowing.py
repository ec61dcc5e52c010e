"""Which of an agent's files would hide a module of the grading Python's library, and the import path grading's
Python starts with: real interpreters, real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prefect_agentenv.runtime.confinement.shadowing import GRADING_SITE, module_name, shadowed_names, shadows


def test_the_standard_library_and_what_the_grading_python_has_installed_are_shadowed_names() -> None:
    names = shadowed_names()
    assert {"json", "unittest", "os", "pytest", "_pytest", "pydantic"} <= names
    assert not {"tests", "test", "solution", "docs"} & names


def test_a_module_file_of_any_kind_or_a_package_gives_its_import_name(tmp_path: Path) -> None:
    for name in ("json.py", "json.pyc", "json.cpython-311-x86_64-linux-gnu.so", "json.abi3.so"):
        (tmp_path / name).write_text("")
        assert module_name(tmp_path / name) == "json", name
    (tmp_path / "_pytest").mkdir()
    assert module_name(tmp_path / "_pytest") is None, "a folder without __init__ only joins a namespace package"
    (tmp_path / "_pytest" / "__init__.py").write_text("")
    assert module_name(tmp_path / "_pytest") == "_pytest"
    (tmp_path / "notes.txt").write_text("")
    assert module_name(tmp_path / "notes.txt") is None


def test_a_module_inside_a_package_shadows_nothing(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "json.py").write_text("")
    (tmp_path / "solution.py").write_text("")
    assert shadows(tmp_path / "json.py")
    assert not shadows(tmp_path / "mypkg" / "json.py")
    assert not shadows(tmp_path / "solution.py")


def _run(folder: Path, *argv: str) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONSAFEPATH": "1", "PYTHONPATH": str(GRADING_SITE)}
    done = subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_grading_python_finds_the_library_before_the_commands_folder_and_the_solution_after_it(
        tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("raise SystemExit('the planted json')\n")
    (tmp_path / "solution.py").write_text("ANSWER = 42\n")
    line = "import json, solution; print(json.__file__ == json.__spec__.origin, solution.ANSWER)"
    assert _run(tmp_path, "-c", line) == "True 42"
    assert "the planted" not in _run(tmp_path, "-c", "import json; print(json.__file__)")
    (tmp_path / "check.py").write_text("import json, solution\nprint(json.dumps(solution.ANSWER))\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _run(elsewhere, str(tmp_path / "check.py")) == "42", "a script's own folder comes after the library"
