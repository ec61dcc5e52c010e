"""The files the runner starts as scripts import only the standard library.

They run by path under another Python (a task's, the base installation read-only inside a
sandbox, ``python -I -S``), where neither this package nor its dependencies can be imported. A
new run-as-script file (a module with a ``__main__`` guard that is not a package's ``__main__.py``)
must be listed here, and so must any module whose docstring promises "standard library only".
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import prefect_agentenv

PACKAGE = Path(prefect_agentenv.__file__).parent

SCRIPTS = [
    "runtime/launch/supervisor.py",  # python -I -S: between the run and every command it starts
    "runtime/launch/script_runner.py",  # a run_code step's script, under any Python 3
    "runtime/confinement/netns_inside.py",  # the forwarder inside a confined agent's network namespace
    "grading/outcome_script.py",  # an env outcome verifier's script, under the task's Python
    "run_services/harbor_shell_client.py",  # a harness's `bash` on a Harbor task, in its sandbox, by the host's Python
]
# Entry points run with ``-m`` inside the package's own environment, so they may import anything.
RUN_AS_MODULE = {"cli.py", "demo.py"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
    return names


def _has_main_guard(path: Path) -> bool:
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def _promises_stdlib(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    return "standard library only" in " ".join(doc.lower().split())


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_imports_only_the_standard_library(script: str) -> None:
    foreign = sorted(name for name in _imports(PACKAGE / script)
                     if name not in sys.stdlib_module_names and name != "__future__")
    assert foreign == [], f"{script} runs by path under another Python: it cannot import {foreign}"


def test_every_run_as_script_file_is_listed() -> None:
    found = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
             if path.name != "__main__.py" and _has_main_guard(path)}
    assert sorted(found - set(SCRIPTS) - RUN_AS_MODULE) == []


def test_every_module_that_promises_the_standard_library_keeps_it() -> None:
    broken = {}
    for path in PACKAGE.rglob("*.py"):
        if _promises_stdlib(path):
            foreign = {name for name in _imports(path) if name not in sys.stdlib_module_names} - {"__future__"}
            # A library module may import its own package's stdlib-only helpers; a script may not.
            if path.relative_to(PACKAGE).as_posix() in SCRIPTS or foreign - {"prefect_agentenv", "."}:
                broken[path.relative_to(PACKAGE).as_posix()] = sorted(foreign)
    assert {k: v for k, v in broken.items() if v} == {}
    assert all(_promises_stdlib(PACKAGE / script) for script in SCRIPTS), "say so in each script's docstring"
