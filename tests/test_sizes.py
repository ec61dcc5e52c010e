"""The package stays in small pieces: no module above 500 lines, no function above 60.

A function is counted from its ``def`` line to its last line, docstring included; a module by
its lines. Both limits are the house style's; split by concern when one is reached.
"""

from __future__ import annotations

import ast
from pathlib import Path

import prefect_agentenv

PACKAGE = Path(prefect_agentenv.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _sources() -> list[tuple[str, str]]:
    return [(path.relative_to(PACKAGE.parent).as_posix(), path.read_text())
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_no_module_is_above_500_lines() -> None:
    long = {name: n for name, text in _sources() if (n := len(text.splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules above {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_above_60_lines() -> None:
    long = {}
    for name, text in _sources():
        for node in ast.walk(ast.parse(text, name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long[f"{name}:{node.lineno} {node.name}"] = length
    assert not long, f"functions above {MAX_FUNCTION_LINES} lines: {long}"


def test_no_folder_but_the_registries_keeps_more_than_15_modules() -> None:
    """A room of more than 15 modules holds several themes: give each a sub-package. ``steps/`` and
    ``commands/`` are registries (one module per step type, per command) and stay flat."""
    package = Path(prefect_agentenv.__file__).parent
    crowded = {str(folder.relative_to(package.parent)): count
               for folder in [package, *(p.parent for p in package.rglob("__init__.py"))]
               if (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 15
               and folder.name not in ("steps", "commands")}
    assert crowded == {}
