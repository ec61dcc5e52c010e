"""The tests mirror the package: a newcomer finds a module's tests by its path.

Every package of the project with three or more modules has a test folder at the same path
under ``tests/``, holding tests. The one rule for ``__init__.py``: every folder that holds test
modules is a package, so two test modules may share a name in different folders; ``tests/`` itself
is not, so it is the import root: the shared helpers at its top (``servers``, ``real_run``, …)
import by their bare names, a helper of the same folder relatively (``from .helpers import``),
and one of another folder by its path from ``tests/`` (``from runtime.launcher_helpers import``). Folders of support files that hold no test module
(``peers``, ``docker``, ``golden``, ``plugin``) are not packages of tests.
"""

from __future__ import annotations

from pathlib import Path

import prefect_agentenv

PACKAGE = Path(prefect_agentenv.__file__).parent
TESTS = Path(__file__).parent


def packages() -> list[Path]:
    """The package's folders (relative), each a Python package."""
    return sorted(p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)


def modules_of(folder: Path) -> list[Path]:
    return [p for p in (PACKAGE / folder).glob("*.py") if p.name not in ("__init__.py", "__main__.py")]


def test_every_package_of_three_or_more_modules_has_its_test_folder() -> None:
    missing = [str(folder) for folder in packages()
               if len(modules_of(folder)) >= 3 and not any((TESTS / folder).glob("test_*.py"))]
    assert missing == [], f"packages without tests/<package>/test_*.py: {missing}"


def test_every_folder_of_test_modules_is_a_package() -> None:
    folders = {p.parent for p in TESTS.rglob("test_*.py")} - {TESTS}
    assert sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").is_file()) == []
    assert not (TESTS / "__init__.py").exists()
