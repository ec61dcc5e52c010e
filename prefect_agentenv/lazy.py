"""Names a package exports but loads on first use, so importing the package stays cheap.

A package lists each name with the module that defines it and sets
``__getattr__ = lazy_names(__name__, MAPPING, globals())``; checkers see the names through imports
under ``TYPE_CHECKING``. The first read imports the module and keeps the value in the package, so
later reads skip the hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, modules: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that loads each name of ``modules`` (name → module) on first use."""

    def load(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later reads skip this hook
        return value

    return load
