"""Modules an agent may not add where grading imports from: names that shadow the standard library or what the
grading Python has installed (docs/security.md, "Grading apart").

A ``pytest.py`` beside a wrong solution that prints ``1 passed`` and exits 0, a ``json.py`` that patches what a
test compares: Python imports a module from the folder a command starts in before its own library, so either
turns a failing check into a pass. Grading sets aside every file or package the agent added whose import name is
one of the grading Python's own (:func:`shadowed_names`), unless the task's own files had it; the grading Python
also starts with a safe import path (``grading_site/sitecustomize.py``), so what is left of the agent's files
comes after the library.
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import pkgutil
import sys
from pathlib import Path

NOT_SHADOWING = frozenset({"test", "tests", "testing", "doc", "docs", "example", "examples", "script", "scripts",
                           "src", "benchmarks", "build", "dist", "__main__", "this", "antigravity"})
"""Top-level names some installed distributions (and the standard library's own test suite) take, that a
solution's folder holds for its own reasons: never set aside by name alone."""
SKIPPED_FOLDERS = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__", ".git"})
"""Folders whose contents are not on a grading command's import path (a venv's packages, a node tree)."""
GRADING_SITE = Path(__file__).with_name("grading_site")
"""First on a grading command's ``PYTHONPATH``: its ``sitecustomize`` puts the command's own folder back, last."""
_SUFFIXES = tuple(sorted(importlib.machinery.all_suffixes(), key=len, reverse=True))


@functools.cache
def shadowed_names() -> frozenset[str]:
    """Import names a grading command's Python finds in its own library: the standard library, the built-in
    modules, and the top-level modules and packages installed for this Python (its venv and base)."""
    installed = {module.name for module in pkgutil.iter_modules(_library_folders())}
    names = {*sys.stdlib_module_names, *sys.builtin_module_names, *installed}
    return frozenset(name for name in names if name not in NOT_SHADOWING and not name.startswith("__editable__"))


def _library_folders() -> list[str]:
    """The runner's import path without the folder it was started in (that one is nobody's library)."""
    here = os.path.realpath(os.getcwd())
    return [entry for entry in sys.path if entry and os.path.isdir(entry) and os.path.realpath(entry) != here]


def module_name(path: Path) -> str | None:
    """The top-level import name a file or folder gives when its folder is on the import path: ``json.py``,
    ``json.pyc``, ``json.cpython-312-x86_64-linux-gnu.so`` → ``json``; a folder with an ``__init__`` → its name;
    anything else → None."""
    if path.is_dir() and not path.is_symlink():
        has_init = any((path / f"__init__{suffix}").exists() for suffix in _SUFFIXES)
        return path.name if has_init and path.name.isidentifier() else None
    for suffix in _SUFFIXES:
        if path.name.endswith(suffix):
            stem = path.name[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


def shadows(path: Path) -> bool:
    """Whether ``path`` would hide a module of the grading Python's own library from a command whose import path
    holds its folder: its import name is one of :func:`shadowed_names`, and its folder is not itself a package
    (``mypkg/json.py`` is ``mypkg.json``, which hides nothing)."""
    name = module_name(path)
    if name is None or name not in shadowed_names():
        return False
    return module_name(path.parent) is None


def in_skipped_folder(relative: Path) -> bool:
    """Whether a path (relative to a sandbox copy) lies in a folder grading's import path never holds."""
    return any(part in SKIPPED_FOLDERS for part in relative.parts[:-1])
