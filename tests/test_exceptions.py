"""The exception tree stays whole: the drawing in ``exceptions.py`` names every ``AgentEnvError``
subclass under its own parent, and what ``runtime/``, ``results/`` and ``flows/`` raise derives from it.

Read from the source (no imports), so a module that cannot be imported here is still checked.
A builtin error is allowed only where it is a programming error or a contract of the language
(a pydantic validator, an ``OSError`` of the operating system), each listed below with why.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import prefect_agentenv
from prefect_agentenv import exceptions

PACKAGE = Path(prefect_agentenv.__file__).parent
CHECKED = ("runtime", "results", "flows")

# (module path below the package, exception name) -> why a builtin error is right there.
BUILTIN_ALLOWED: dict[tuple[str, str], str] = {
    ("runtime/confinement/netns_inside.py", "ValueError"):
        "a run-as-script file: standard library only, it cannot import the tree",
    ("runtime/confinement/network_allow.py", "ValueError"):
        "raised inside a pydantic validator, which turns it into the field's ValidationError",
    ("runtime/launch/base.py", "ValueError"):
        "raised inside pydantic validators (a launch spec's fields), which turn it into a ValidationError",
    ("runtime/confinement/netns.py", "OSError"):
        "the socket contract: a caller handles it as it handles the connection's own OSError",
    ("runtime/launch/guest_server.py", "OSError"):
        "a server that stopped while starting fails as a bind would, and its caller handles both alike",
    ("runtime/launch/process.py", "FileNotFoundError"):
        "the errors subprocess raises for a missing command, raised before the supervisor hides them",
    ("runtime/launch/process.py", "PermissionError"):
        "the error subprocess raises for a command that is not executable, as above",
    ("results/comparison/compare.py", "ValueError"):
        "a programming error: a confidence or resample count outside its domain (documents validate theirs)",
    ("results/stats/intervals.py", "ValueError"):
        "a programming error: counts or a probability outside the function's domain",
    ("results/stats/paired.py", "ValueError"):
        "a programming error: counts or a confidence outside the function's domain",
    ("flows/control/gate.py", "ValueError"):
        "a programming error: a concurrency below 1 (control set and the documents check theirs first)",
    ("results/stats/summary.py", "ValueError"):
        "a programming error: k below 1 (the command line and documents check theirs)",
    ("runtime/confinement/netns.py", "IncompleteReadError"):
        "the stream contract: a peer that hung up mid-frame ends the forwarding as asyncio's own reader would",
    ("flows/adapters/step_tasks.py", "CancelledError"):
        "asyncio's cancellation contract: a task run Prefect cancelled cancels the step that awaited it",
    ("flows/adapters/step_tasks.py", "TypeError"):
        "a programming error: Prefect or a step returned something of the wrong type",
    ("flows/adapters/subflow_start.py", "RuntimeError"):
        "a programming error: a subflow started from outside a flow run",
}

# Exceptions used as signals inside one module and never let out of it.
PRIVATE_SIGNALS = {"_PortTaken", "RetriesSpent", "_VersionTaken", "_Fatal", "_LimitError"}


@functools.cache
def _sources() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for path in sorted(PACKAGE.rglob("*.py"))]


@functools.cache
def _class_bases() -> dict[str, list[str]]:
    """Every class of the package by name, with its bases' names."""
    bases: dict[str, list[str]] = {}
    for _, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
    return bases


def _derives(name: str, bases: dict[str, list[str]], root: str = "AgentEnvError") -> bool:
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current == root:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(bases.get(current, []))
    return False


def drawn_tree() -> dict[str, str | None]:
    """The docstring's drawing, each class with the parent it is drawn under."""
    doc = exceptions.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w*Error)\b", line)
        if not match:
            continue
        depth = len(match.group(1)) // 4 + (1 if "── " in line else 0)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, match.group(2)))
    return parents


def test_the_drawing_names_every_subclass_under_its_parent() -> None:
    bases = _class_bases()
    tree = drawn_tree()
    subclasses = {name for name in bases if name != "AgentEnvError" and _derives(name, bases)}
    missing = sorted(subclasses - set(tree))
    assert not missing, f"draw these in exceptions.py's docstring: {missing}"
    assert sorted(set(tree) - subclasses - {"AgentEnvError"}) == [], "the drawing names classes that are gone"
    wrong = {name: parent for name, parent in tree.items()
             if parent is not None and not _derives(name, bases, parent)}
    assert wrong == {}, "drawn under a parent they do not derive from"


def _raised_names(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id[:1].isupper():
                found.append((node.lineno, target.id))
            elif isinstance(target, ast.Attribute) and target.attr[:1].isupper():
                found.append((node.lineno, target.attr))
    return found


def test_runtime_results_and_flows_raise_errors_of_the_tree() -> None:
    bases = _class_bases()
    strays = []
    for path, tree in _sources():
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(CHECKED):
            continue
        for line, name in _raised_names(tree):
            if name in PRIVATE_SIGNALS or _derives(name, bases) or (rel, name) in BUILTIN_ALLOWED:
                continue
            if name in bases and not _derives(name, bases):
                strays.append(f"{rel}:{line} raises {name}, a class outside the tree")
            elif name not in bases:
                strays.append(f"{rel}:{line} raises the builtin {name}: use the tree, or allow it here with why")
    assert not strays, "\n".join(strays)


def test_their_exception_classes_derive_from_the_tree() -> None:
    bases = _class_bases()
    strays = []
    for path, tree in _sources():
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(CHECKED):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.ClassDef) and node.name.endswith("Error")
                    and not _derives(node.name, bases)):
                strays.append(f"{rel}: {node.name}")
    assert strays == []


def test_the_allow_list_holds_no_stale_entry() -> None:
    raised = {(path.relative_to(PACKAGE).as_posix(), name)
              for path, tree in _sources() for _, name in _raised_names(tree)}
    assert sorted(set(BUILTIN_ALLOWED) - raised) == []
