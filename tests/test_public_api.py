"""The public API: everything in __all__ exists, loads lazily and is typed for checkers; the
plugin toolkit lists what it exports."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import prefect_agentenv


def test_every_name_in_all_is_importable() -> None:
    for name in prefect_agentenv.__all__:
        assert getattr(prefect_agentenv, name) is not None, name


def test_all_is_sorted_and_unique() -> None:
    assert prefect_agentenv.__all__ == sorted(set(prefect_agentenv.__all__))


def test_importing_the_package_does_not_import_prefect() -> None:
    code = "import sys, prefect_agentenv.envs.catalog; print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _type_checking_imports(module: ModuleType) -> dict[str, str]:
    """Name -> module of the imports under ``if TYPE_CHECKING:`` in a module's source."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                found.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    return found


def test_all_and_the_lazy_table_name_the_same_members() -> None:
    lazy = set(prefect_agentenv._LAZY)
    exported = set(prefect_agentenv.__all__)
    assert not exported - lazy, f"in __all__ but not loadable: {sorted(exported - lazy)}"
    assert not lazy - exported, f"loadable but not in __all__: {sorted(lazy - exported)}"


def test_type_checkers_see_every_member_from_the_module_it_loads_from() -> None:
    assert _type_checking_imports(prefect_agentenv) == prefect_agentenv._LAZY


def test_each_member_is_the_object_its_module_defines() -> None:
    for name, module in prefect_agentenv._LAZY.items():
        assert getattr(prefect_agentenv, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_member_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        prefect_agentenv.nothing_here  # noqa: B018 - the access is the test


def test_the_plugin_toolkit_exports_what_it_lists_sorted_and_stays_light() -> None:
    import prefect_agentenv.plugin as plugin

    assert plugin.__all__ == sorted(set(plugin.__all__))
    assert all(getattr(plugin, name, None) is not None for name in plugin.__all__)
    public = {n for n, v in vars(plugin).items() if not n.startswith("_") and not isinstance(v, ModuleType)}
    assert public - {"annotations"} == set(plugin.__all__)
    code = "import sys, prefect_agentenv.plugin; print(sorted({'prefect', 'httpx', 'a2a', 'mcp'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
