"""The public API: everything in __all__ exists and loads lazily."""

from __future__ import annotations

import subprocess
import sys

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
